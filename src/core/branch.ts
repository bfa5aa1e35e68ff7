import type { BranchId, CallId, CheckpointId, RunId, SessionId } from "./ids.js";

/**
 * A place in a session's history (SPEC W2): after step `stepIndex` of the run at `runOrdinal`
 * (its tool results included), or after the whole run when `stepIndex` is null. `runOrdinal` 0
 * with a null step is the start: no history at all.
 */
export interface HistoryPoint {
  runOrdinal: number;
  stepIndex: number | null;
}

/** Where a fork or a rewind goes, as a client names it. */
export type BranchAt =
  | { runId: RunId; stepIndex?: number }
  /** A step of the session's latest run. */
  | { stepIndex: number }
  /** A user message: just before its run; a model or tool message: after its step. */
  | { messageId: string }
  /** Rewind only: back to the tip of a branch an earlier rewind set aside (undoes it). */
  | { branchId: BranchId };

/** Why an abandoned call's effects outlive a fork or a rewind: they are not files of the workspace. */
export type NotUndoneReason = "network" | "mcp" | "unknown_effects" | "background_command" | "full_access" | "sub_agent";

/** A call after the point whose effects no checkpoint can take back. */
export interface NotUndoneCall {
  toolCallId: CallId;
  /** The provider's call id, as in events. */
  callId: string;
  runId: RunId;
  stepIndex: number;
  name: string;
  reason: NotUndoneReason;
  /** A background command it started that is still running. */
  stillRunning: boolean;
}

/** Where a forked session came from. */
export interface ForkOrigin {
  sessionId: SessionId;
  at: HistoryPoint;
  checkpointId: CheckpointId | null;
}
