import type { components } from "./generated/openapi.js";

/**
 * The events of a session, as the API sends them (SPEC L4, D5, X1): a discriminated union on
 * `type`. The OpenAPI document types an event's `data` loosely, so this union is written by
 * hand after the service's own (`src/core/events.ts`); test/client/event-types.test.ts fails
 * the type check when the two part.
 *
 * Every event has a per-session sequence number `seq`, gap-free from 1; streams resume after
 * the last one seen. `step` names the model step attempt that produced it: a `step_start` with
 * a higher `attempt` for the same step index means what earlier attempts streamed is void.
 * Events carry ids and text, never binary content (artifacts are fetched by id).
 */

export type RunStatus = components["schemas"]["Run"]["status"];

/** A place in a session's history: after step `stepIndex` of the run at `runOrdinal`, or after the whole run (null). */
export type HistoryPoint = components["schemas"]["HistoryPoint"];

/** A call a fork or a rewind left behind whose effects no checkpoint takes back (network, MCP, sub-agents, background or Full Access commands). */
export type NotUndoneCall = components["schemas"]["NotUndoneCall"];
export type TerminalRunStatus = Exclude<RunStatus, "queued" | "running" | "awaiting_approval">;
export type ToolCallStatus =
  | "queued"
  | "awaiting_approval"
  | "running"
  | "succeeded"
  | "failed"
  | "denied"
  | "skipped"
  | "cancelled"
  | "interrupted";
export type TerminalToolCallStatus = Exclude<ToolCallStatus, "queued" | "awaiting_approval" | "running">;

export type FoyaEventBody =
  | { type: "run_start"; runId: string; ordinal: number }
  | { type: "step_start"; stepIndex: number; attempt: number; tools: string[] }
  | { type: "text_delta"; text: string }
  /**
   * The model's reasoning as it streams (extended thinking), apart from its answer text;
   * `redacted`: an encrypted block went by here, whose content no one sees (`text` is empty).
   */
  | { type: "thinking_delta"; text: string; redacted?: true }
  /** A call the model is producing; its arguments follow in `tool_update`s. */
  | { type: "tool_begin"; callId: string; name: string; callIndex: number; status: "queued" }
  | { type: "tool_update"; callId: string; argumentsDelta?: string; status?: ToolCallStatus; progress?: string }
  | {
      type: "tool_end";
      callId: string;
      name: string;
      status: TerminalToolCallStatus;
      isError: boolean;
      errorCode?: string;
      /** Short text view of the result; the full result is in the session's messages. */
      preview: string;
      /** Unified diff for display (write, edit); never sent to the model. */
      diff?: string;
      /** File changes the call made, to review or revert with `fileChanges`. */
      fileChanges?: Array<{
        id: string;
        path: string;
        existedBefore: boolean;
        sha256Before: string | null;
        sha256After: string | null;
        /** Recorded, not made: the workspace's file changed after the command made its version, and the newer content was kept. */
        notApplied?: "changed_since";
      }>;
    }
  | { type: "approval_request"; approvalId: string; callId: string; name: string; reason: string; expiresAt: string }
  | {
      type: "approval_resolved";
      approvalId: string;
      callId: string;
      status: "approved" | "denied" | "expired" | "cancelled";
      /** Approved with arguments edited by the decider. */
      edited: boolean;
      reason?: string;
    }
  | {
      type: "step_end";
      stepIndex: number;
      attempt: number;
      finishReason: string;
      stopReason?: string;
      usage?: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number };
      toolCalls: number;
      /** The provider profile and model that answered (a fallback's when the session's was paused or failing). */
      profile?: string;
      model?: string;
    }
  /**
   * A change of an active run's status. Never stored: `recovering`, its worker died and another
   * takes over; `waiting_for_provider`, its next step waits about `waitMs` for its provider
   * profile's budget or pause (`reason` says which), holding no worker, until its `step_start`.
   */
  | { type: "run_status"; status: RunStatus | "recovering" | "waiting_for_provider"; reason?: string; waitMs?: number }
  /** An `agent` call started a sub-agent: its own session's events tell what it does. */
  | { type: "subagent_start"; callId: string; childSessionId: string; childRunId: string; depth: number }
  /**
   * The workspace folder was missing, or differed from the project's latest checkpoint with nothing
   * of the project's own to explain it (W1), or a rewind or fork made an earlier tree the latest (W2),
   * and was rebuilt from that checkpoint before the batch ran.
   */
  | {
      type: "workspace_restored";
      reason: "missing" | "damaged" | "rewound" | "moved";
      checkpointId: string;
      checkpointSeq: number;
      files: number;
      /** Files the checkpoint kept by size and digest only (too large to store): not written back. At most 100 listed. */
      filesNotRestored: string[];
    }
  /**
   * A rewind (W2): the history after `at` was set aside as branch `branchId` (a branch set aside
   * earlier came back, when named), and the workspace returns to checkpoint `checkpointId` before the
   * next batch. `notUndone`: calls set aside whose effects no checkpoint takes back (at most 100).
   */
  | {
      type: "session_rewound";
      branchId: string;
      at: HistoryPoint;
      checkpointId: string;
      tipCheckpointId: string | null;
      restoredBranchId: string | null;
      messagesSetAside: number;
      notUndone: NotUndoneCall[];
    }
  /** This session is a fork (W2): its history up to here was copied from `fromSessionId` at `at`. */
  | { type: "session_forked"; fromSessionId: string; at: HistoryPoint; checkpointId: string; notUndone: NotUndoneCall[] }
  | { type: "tasks_updated"; tasks: Array<{ title: string; status: "pending" | "in_progress" | "done" }> }
  | { type: "run_end"; status: TerminalRunStatus; error?: { code: string; message: string } };

export type FoyaEventType = FoyaEventBody["type"];

/** One event of a session's log; narrow on `type` to type `data`. */
export type FoyaEvent = {
  [Type in FoyaEventType]: {
    seq: number;
    sessionId: string;
    runId: string;
    step: { index: number; attempt: number } | null;
    type: Type;
    data: Extract<FoyaEventBody, { type: Type }>;
    /** When the event was stored, ISO 8601. */
    at: string;
  };
}[FoyaEventType];
