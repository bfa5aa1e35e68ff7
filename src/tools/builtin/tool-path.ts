import type { ToolContext } from "../tool.js";
import { resolveWorkspacePath, type WorkspacePathResult } from "../workspace-path.js";

/** A file tool's path: confined to the workspace except in Full Access (SPEC S2, F4). */
export function resolveToolPath(
  context: Pick<ToolContext, "workspaceDir" | "approvalMode">,
  requested: string,
  options: { followFinalLink?: boolean } = {},
): Promise<WorkspacePathResult> {
  return resolveWorkspacePath(context.workspaceDir, requested, { ...options, allowOutside: context.approvalMode === "full_access" });
}
