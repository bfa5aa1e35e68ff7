import type { sessions } from "../db/schema.js";
import { agentToolName } from "../tools/builtin/agent-tool.js";
import type { SubAgentRequest } from "../tools/tool.js";
import type { ApprovalMode, RunMode } from "../core/session.js";

type SessionRow = typeof sessions.$inferSelect;

/** A session at the depth limit is not offered the `agent` tool: every call of it would be refused. */
export function dropAgentAtDepthLimit<T extends { name: string }>(
  tools: readonly T[],
  session: Pick<SessionRow, "depth">,
  maxDepth: number,
): readonly T[] {
  return session.depth < maxDepth ? tools : tools.filter((tool) => tool.name !== agentToolName);
}

/** Wider modes allow more without asking; a sub-agent's may not be wider than its parent's. */
const modeWidth: Record<ApprovalMode, number> = { manual: 0, auto: 1, full_access: 2 };

/** The child session's limits: each the parent's, or narrower (SPEC A1). */
export interface ChildLimits {
  toolAllowList: string[] | null;
  runMode: RunMode;
  approvalMode: ApprovalMode;
  depth: number;
}

/**
 * Derives a sub-agent's limits from its parent session and its request, or says why it
 * may not start: too deep, a tool the parent may not use (or that does not exist), or a
 * wider approval mode. A read-only parent gives a read-only child.
 */
export function narrowLimits(
  parent: Pick<SessionRow, "toolAllowList" | "runMode" | "approvalMode" | "depth">,
  request: SubAgentRequest,
  options: { maxDepth: number; isTool: (name: string) => boolean },
): { ok: true; limits: ChildLimits } | { ok: false; errorCode: string; message: string } {
  const depth = parent.depth + 1;
  if (depth > options.maxDepth) {
    return {
      ok: false,
      errorCode: "agent_depth_limit",
      message: `Sub-agents may nest at most ${options.maxDepth} levels deep; this session is at level ${parent.depth}.`,
    };
  }
  let toolAllowList = parent.toolAllowList;
  if (request.tools !== undefined) {
    const unknown = request.tools.filter((name) => !options.isTool(name));
    if (unknown.length > 0)
      return {
        ok: false,
        errorCode: "agent_unknown_tool",
        message: `No tool named ${unknown.map((n) => JSON.stringify(n)).join(", ")} exists.`,
      };
    const wider = parent.toolAllowList === null ? [] : request.tools.filter((name) => !parent.toolAllowList?.includes(name));
    if (wider.length > 0) {
      return {
        ok: false,
        errorCode: "agent_tools_not_allowed",
        message: `A sub-agent may only use tools this session may use; not ${wider.map((n) => JSON.stringify(n)).join(", ")}.`,
      };
    }
    toolAllowList = [...new Set(request.tools)].sort();
  }
  const approvalMode = request.approvalMode ?? parent.approvalMode;
  if (modeWidth[approvalMode] > modeWidth[parent.approvalMode]) {
    return {
      ok: false,
      errorCode: "agent_mode_not_allowed",
      message: `A sub-agent's approval mode may not be wider than this session's (${parent.approvalMode}).`,
    };
  }
  const runMode: RunMode = parent.runMode === "read_only" || request.readOnly === true ? "read_only" : "normal";
  return { ok: true, limits: { toolAllowList, runMode, approvalMode, depth } };
}
