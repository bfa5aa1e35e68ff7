import { isWorkspaceError } from "../../workspace/workspace-files.js";
import { errorResult, type ToolRefusal, type ToolResult } from "../tool.js";

/**
 * The `is_error` result for a refusal of the workspace door (SPEC S6, T4): its
 * stable code and message go to the model, which may correct itself. Anything
 * else is not a business failure and is thrown on.
 */
export function workspaceFailure(error: unknown): ToolResult {
  if (isWorkspaceError(error)) return errorResult(error.code, error.message);
  throw error;
}

/** A door check as a tool's `refusal` (S11): the code and message `run` would answer, or null. */
export async function doorRefusal(check: () => Promise<void>): Promise<ToolRefusal | null> {
  try {
    await check();
    return null;
  } catch (error) {
    if (isWorkspaceError(error)) return { code: error.code, message: error.message };
    throw error;
  }
}
