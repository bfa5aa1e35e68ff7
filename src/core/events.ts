import type { RunStatus, TerminalRunStatus } from "./run-status.js";
import type { ToolCallStatus, TerminalToolCallStatus } from "./tool-call-status.js";
import type { NotAppliedReason } from "./file-change-record.js";
import type { HistoryPoint, NotUndoneCall } from "./branch.js";
import type { ApprovalId, BranchId, CheckpointId, RunId, SessionId } from "./ids.js";

/**
 * Events clients see (SPEC L4, D5, X1). Each is persisted with a per-session
 * sequence number, then published on Redis. They carry references, never
 * binary content. `step` names the model Step attempt that produced the event;
 * a client that sees `step_start` with a higher attempt for the same step index
 * discards what earlier attempts of that step streamed.
 */
export type EventBody =
  | { type: "run_start"; runId: RunId; ordinal: number }
  | { type: "step_start"; stepIndex: number; attempt: number; tools: string[] }
  | { type: "text_delta"; text: string }
  /**
   * The model's reasoning as it streams (SPEC PR5), apart from its answer; `redacted`: an encrypted
   * block went by here, whose content no one sees (`text` is empty).
   */
  | { type: "thinking_delta"; text: string; redacted?: true }
  | { type: "tool_begin"; callId: string; name: string; callIndex: number; status: "queued" }
  | { type: "tool_update"; callId: string; argumentsDelta?: string; status?: ToolCallStatus; progress?: string }
  | {
      type: "tool_end";
      callId: string;
      name: string;
      status: TerminalToolCallStatus;
      isError: boolean;
      errorCode?: string;
      /** Short text view of the result for UIs; the full result is in the messages. */
      preview: string;
      diff?: string;
      /** File changes the call made (F5): what clients show instead of the raw arguments. */
      fileChanges?: Array<{
        id: string;
        path: string;
        existedBefore: boolean;
        sha256Before: string | null;
        sha256After: string | null;
        /** Recorded, not made: the workspace changed there since (SPEC X7). */
        notApplied?: NotAppliedReason;
      }>;
    }
  | { type: "approval_request"; approvalId: ApprovalId; callId: string; name: string; reason: string; expiresAt: string }
  | {
      type: "approval_resolved";
      approvalId: ApprovalId;
      callId: string;
      status: "approved" | "denied" | "expired" | "cancelled";
      /** Approved with arguments edited by the decider (X3). */
      edited: boolean;
      reason?: string;
    }
  | {
      type: "step_end";
      stepIndex: number;
      attempt: number;
      finishReason: string;
      /** The provider's own stop reason (e.g. `end_turn`), when it sent one. */
      stopReason?: string;
      usage?: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number };
      toolCalls: number;
      /** The provider profile and model that answered: a fallback's when the session's profile was paused or failing (PR3). */
      profile?: string;
      model?: string;
    }
  /**
   * A change of an active run's status. Two are no stored status: `recovering`, the run's worker
   * was found dead (SPEC D9) and its work is being taken over, `reason` says by what it was
   * noticed; `waiting_for_provider`, its next model step waits, holding no worker, for its
   * provider profile's budget or pause (PR3), about `waitMs`, `reason` says why. The step's
   * `step_start` says it goes on.
   */
  | { type: "run_status"; status: RunStatus | "recovering" | "waiting_for_provider"; reason?: string; waitMs?: number }
  /** An `agent` call started a sub-agent (A1): its session and run, whose own events tell what it does. */
  | { type: "subagent_start"; callId: string; childSessionId: SessionId; childRunId: RunId; depth: number }
  /**
   * The workspace folder was missing, or differed from the project's latest checkpoint with nothing
   * of the project's own to explain it (W1), or a rewind or fork made an earlier tree the latest (W2),
   * and was rebuilt from that checkpoint before the batch ran.
   */
  | {
      type: "workspace_restored";
      /** `moved`: the project was placed on this host (SPEC W3) and its workspace rebuilt here. */
      reason: "missing" | "damaged" | "rewound" | "moved";
      checkpointId: string;
      checkpointSeq: number;
      files: number;
      /** Files the checkpoint kept by size and digest only (too large to store): not written back. At most 100 listed. */
      filesNotRestored: string[];
    }
  /**
   * A rewind (W2): the history after `at` was set aside as branch `branchId` (and a branch set aside
   * earlier came back, when named), and the workspace returns to checkpoint `checkpointId` before the
   * next batch. `notUndone`: calls set aside whose effects no checkpoint takes back (at most 100).
   */
  | {
      type: "session_rewound";
      branchId: BranchId;
      at: HistoryPoint;
      checkpointId: CheckpointId;
      tipCheckpointId: CheckpointId | null;
      restoredBranchId: BranchId | null;
      messagesSetAside: number;
      notUndone: NotUndoneCall[];
    }
  /** This session is a fork (W2): its history up to here was copied from `fromSessionId` at `at`. */
  | {
      type: "session_forked";
      fromSessionId: SessionId;
      at: HistoryPoint;
      checkpointId: CheckpointId;
      notUndone: NotUndoneCall[];
    }
  | { type: "tasks_updated"; tasks: Array<{ title: string; status: "pending" | "in_progress" | "done" }> }
  | { type: "run_end"; status: TerminalRunStatus; error?: { code: string; message: string } };

export type EventType = EventBody["type"];

export interface StepRef {
  index: number;
  attempt: number;
}

/** An event as stored and as sent to clients. */
export interface SessionEvent {
  seq: number;
  sessionId: SessionId;
  runId: RunId;
  step: StepRef | null;
  type: EventType;
  data: EventBody;
  at: string;
}

/** What a producer hands to the event store; the store assigns `seq`. */
export interface NewEvent {
  runId: RunId;
  step: StepRef | null;
  body: EventBody;
}
