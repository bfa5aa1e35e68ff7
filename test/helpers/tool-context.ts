import type { ToolContext } from "../../src/tools/tool.js";

/** A ToolContext for calling a tool directly, without a run around it. */
export function toolContext(overrides: Partial<ToolContext> & { workspaceDir: string }): ToolContext {
  return {
    tenantId: "ten",
    sessionId: "ses",
    runId: "run",
    projectId: "prj",
    approvalMode: "auto",
    sandbox: { network: false },
    provider: { profile: "scripted", model: "scripted" },
    exposedTools: [],
    signal: new AbortController().signal,
    deferredTools: { search: () => [], activate: async () => {} },
    commands: {
      start: async () => ({ error: "no background commands here" }),
      get: async () => undefined,
      cancel: async () => undefined,
    },
    tasks: { replace: async () => {} },
    blobs: { put: async () => "" },
    history: { readToolResult: async () => undefined },
    subagents: { start: async () => ({ ok: false, errorCode: "agent_unavailable", message: "no sub-agents here" }) },
    reportProgress: () => {},
    ...overrides,
  };
}
