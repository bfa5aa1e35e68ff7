import type { ResultPart } from "../core/history.js";
import type { TerminalRunStatus } from "../core/run-status.js";
import { resumeParkedBatch } from "./resume-batch.js";
import type { Effects } from "../unit-of-work/unit-of-work.js";
import type { RunId } from "../ids.js";

/** What the parent's `agent` call answers when its sub-agent ended without completing. */
const endings: Record<Exclude<TerminalRunStatus, "completed">, { code: string; text: string }> = {
  failed: { code: "agent_failed", text: "The sub-agent failed" },
  cancelled: { code: "agent_cancelled", text: "The sub-agent was cancelled" },
  interrupted: { code: "agent_interrupted", text: "The sub-agent was interrupted" },
};

/**
 * A sub-agent's end is its `agent` call's result (SPEC A1), written in the child's own
 * terminal transaction: the call's status and tool message in the parent's history, its
 * `tool_end` in the parent's events, and the parent's batch re-armed if it was parked.
 * Nothing is lost between the child ending and the parent learning it: both are one commit.
 * A run that is nobody's sub-agent, or whose call was already closed (the parent ended
 * first), changes nothing.
 */
export async function deliverToParentCall(
  fx: Effects,
  childRunId: RunId,
  status: TerminalRunStatus,
  error: { code: string; message: string } | undefined,
): Promise<void> {
  const waiting = await fx.store.toolCalls.callWaitingForChild(childRunId);
  if (!waiting) return;
  // Parent before its call, as every writer of a run locks it first.
  const parent = await fx.store.runs.lockRun(waiting.runId);
  if (!parent || parent.ordinal === null) return;
  const outcome = status === "completed" ? await answerOf(fx, childRunId) : failureOf(status, error);
  const answered = await fx.store.toolCalls.answerCall({
    run: { ...parent, ordinal: parent.ordinal },
    call: waiting,
    outcome: {
      status: outcome.isError ? "failed" : "succeeded",
      isError: outcome.isError,
      errorCode: outcome.errorCode,
      content: outcome.content,
    },
    step: null,
  });
  if (!answered.answered) return;
  fx.track(answered.events);
  const call = waiting;
  await resumeParkedBatch(fx, parent, call.stepIndex);
}

interface ChildOutcome {
  isError: boolean;
  errorCode: string | null;
  content: ResultPart[];
}

/** The child's final answer: the text of its last assistant message. */
async function answerOf(fx: Effects, childRunId: RunId): Promise<ChildOutcome> {
  const last = await fx.store.messages.lastAssistantMessageOfRun(childRunId);
  const text = last?.role === "assistant" ? last.text : "";
  return {
    isError: false,
    errorCode: null,
    content: [{ type: "text", text: text.trim() === "" ? "The sub-agent finished without a final answer." : text }],
  };
}

function failureOf(status: Exclude<TerminalRunStatus, "completed">, error: { code: string; message: string } | undefined): ChildOutcome {
  const ending = endings[status];
  const why = error ? `: ${error.message} (${error.code})` : ".";
  return { isError: true, errorCode: ending.code, content: [{ type: "text", text: `${ending.text}${why}` }] };
}
