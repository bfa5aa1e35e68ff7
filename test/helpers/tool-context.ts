import { chmod, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config.js";
import type { Confinement } from "../../src/sandbox/confinement.js";
import { defaultProcessLimits, type ProcessLimits } from "../../src/core/process-limits.js";
import { sandboxFromConfig } from "../../src/sandbox/sandbox-from-config.js";
import type { SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { createCallProcesses } from "../../src/tools/shell/create-call-processes.js";
import type { CallProcesses } from "../../src/tools/call-processes.js";
import type { ToolContext } from "../../src/tools/tool.js";
import { createWorkspaceOwnership } from "../../src/workspace/project-workspace.js";
import { openWorkspaceFiles } from "../../src/workspace/open-workspace-files.js";
import type { ProcessIdentity } from "../../src/core/process-identity.js";

export const toolPath = "/usr/local/bin:/usr/bin:/bin";

/**
 * The host uid tests run tool processes as when the test process is root (as
 * in CI): a tenant slot far above any real tenant's. A test that needs two
 * tenants passes its own identity.
 */
export const testIdentity: ProcessIdentity =
  process.getuid?.() === 0
    ? { uid: 1_000_000_000 + 90_000_001, gid: 1_000_000_000 + 90_000_001 }
    : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };

const ownership = createWorkspaceOwnership();

/**
 * Gets a folder a test made (with mkdtemp, 0700 and root's) ready for tool
 * processes, as project creation does for real workspaces: owned by the
 * identity, and every folder above it passable.
 */
export async function readyForTools(workspaceDir: string, identity: ProcessIdentity = testIdentity): Promise<void> {
  await ownership.ensure(workspaceDir, identity);
  const top = path.dirname(tmpdir());
  for (let folder = path.dirname(workspaceDir); folder !== top && folder !== "/"; folder = path.dirname(folder)) {
    const current = await stat(folder);
    if ((current.mode & 0o001) === 0) await chmod(folder, (current.mode & 0o777) | 0o011);
  }
}

export interface ToolContextOverrides extends Partial<ToolContext> {
  workspaceDir: string;
  /** Default: sandboxed without the network; `{ kind: "full_access" }` also sets the approval mode. */
  confinement?: Confinement;
  /** Default: the runner the service would build, with its workspaces folder set to the workspace's parent's parent; null for none. */
  runner?: SandboxRunner | null;
  identity?: ProcessIdentity;
  limits?: Partial<ProcessLimits>;
}

/**
 * A ToolContext for calling a tool directly, without a run around it: the
 * real workspace door and the real process runner, as the worker builds them.
 */
export function toolContext(overrides: ToolContextOverrides): ToolContext {
  const { workspaceDir, confinement = { kind: "sandbox", network: false }, identity = testIdentity, limits, runner, ...rest } = overrides;
  // Built on first use: tests of file tools need no runner (and their workspace may sit right below /tmp).
  const processes = (): CallProcesses =>
    createCallProcesses({
      runner:
        runner === null
          ? undefined
          : (runner ?? sandboxFromConfig(loadConfig({ FOYA_WORKSPACES_DIR: path.dirname(path.dirname(workspaceDir)), PATH: toolPath }))),
      toolPath,
      workspaceDir,
      confinement,
      identity,
      limits: { ...defaultProcessLimits, ...limits },
    });
  return {
    tenantId: "ten_test",
    sessionId: "ses_test",
    runId: "run_test",
    projectId: "prj_test",
    approvalMode: confinement.kind === "full_access" ? "full_access" : "auto",
    workspace: openWorkspaceFiles({
      root: workspaceDir,
      trashStaging: path.join(path.dirname(workspaceDir), ".trash-staging"),
      trash: path.join(path.dirname(workspaceDir), ".trash"),
    }),
    processes: {
      limits: { ...defaultProcessLimits, ...limits },
      async prepare(command, output) {
        await readyForTools(workspaceDir, identity);
        return processes().prepare(command, output);
      },
    },
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
    reportProgress: async () => {},
    ...rest,
  };
}
