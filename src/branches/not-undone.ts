import type { NotUndoneCall, NotUndoneReason } from "../core/branch.js";
import type { AbandonedCallRow } from "../store/branches.js";
import type { SideEffect } from "../tools/tool.js";

/** What tells a call's kind of effect: its tool's declared side effect, and the session's mode. */
export interface EffectOf {
  sideEffectOf(name: string): SideEffect | undefined;
  /** Full Access: commands ran unconfined, anywhere on the host. */
  fullAccess: boolean;
}

/**
 * The calls after a fork's or a rewind's point whose effects no checkpoint takes back (SPEC W2):
 * what went over the network, to an MCP server or a sub-agent, commands that ran in the background
 * or with Full Access, and tools that say nothing of their effects. File changes in the workspace
 * are not listed: the checkpoint of the point undoes them.
 */
export function notUndoneCalls(rows: readonly AbandonedCallRow[], effects: EffectOf): NotUndoneCall[] {
  return rows.flatMap((row) => {
    const reason = reasonOf(row, effects);
    if (reason === null) return [];
    const background = reason === "background_command";
    return [
      {
        toolCallId: row.id,
        callId: row.callId,
        runId: row.runId,
        stepIndex: row.stepIndex,
        name: row.name,
        reason,
        stillRunning: background && row.runningCommands.length > 0,
      },
    ];
  });
}

function reasonOf(row: AbandonedCallRow, effects: EffectOf): NotUndoneReason | null {
  if (row.childRunId !== null) return "sub_agent";
  if (row.name.startsWith("mcp__")) return "mcp";
  const sideEffect = effects.sideEffectOf(row.name);
  if (sideEffect === "network") return "network";
  if (sideEffect === "other" || sideEffect === undefined) return "unknown_effects";
  if (sideEffect !== "exec") return null;
  if (effects.fullAccess) return "full_access";
  if (ranInBackground(row.shellArguments)) return "background_command";
  return row.network ? "network" : null;
}

function ranInBackground(raw: string | null): boolean {
  if (raw === null) return false;
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null && (parsed as { background?: unknown }).background === true;
  } catch {
    return false;
  }
}
