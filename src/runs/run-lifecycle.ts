import type { ResultPart } from "../core/history.js";
import { isTerminalRunStatus, type TerminalRunStatus } from "../core/run-status.js";
import { deliverToParentCall } from "./deliver-child-result.js";
import type { RunRow } from "../store/runs.js";
import type { Effects } from "../unit-of-work/unit-of-work.js";
import type { RunId, TenantId } from "../ids.js";

/**
 * Run transitions shared by the API and the workers, composed of the store's
 * guarded statements inside the caller's transaction; none publishes or
 * enqueues by itself.
 */

export type { RunRow };

/**
 * Makes a queued run the session's active run: gives it its place in history,
 * writes the user's input, announces `run_start`, and records the first step
 * job as the run's next job.
 */
async function activateRun(effects: Effects, run: Pick<RunRow, "id" | "tenantId" | "sessionId" | "input">): Promise<number> {
  // Its place, its first job, the user message and `run_start`, in one statement.
  const { ordinal, next, events } = await effects.store.runs.activateRun(run);
  effects.track(events);
  effects.dispatch({ runId: run.id, tenantId: run.tenantId, next, redispatches: 0 });
  return ordinal;
}

/**
 * Moves a run to a terminal status, announces it, and lets the session's next
 * waiting run start. With `fence`, only the holder of that fence may do it.
 * Answers false when the run was already terminal or the fence is stale.
 */
export async function endRun(
  effects: Effects,
  run: Pick<RunRow, "id" | "tenantId" | "sessionId">,
  status: TerminalRunStatus,
  options: { fence?: number; error?: { code: string; message: string }; activateNext?: boolean } = {},
): Promise<boolean> {
  // The run's end, its run_end and its session's slot in one statement, then what is left to do in one more.
  const finished = await effects.store.runs.finishRun(run, status, options);
  if (!finished) return false;
  effects.track(finished.events);
  const next = await effects.store.runs.afterRunEnd(run);
  // A sub-agent's parent first: once its last child is done it works again, in the slot the child
  // leaves (SPEC X5), so the runs admitted next are counted against it.
  if (next.parentWaits) await deliverToParentCall(effects, run.id, status, options.error);
  // The oldest run waiting behind it moves up (admitted if its tenant has a slot, else holding the
  // session's slot), then the tenant's free slots go to its runs waiting for one (SPEC X5).
  if (finished.released && !finished.sessionGone && (options.activateNext ?? true) && next.sessionWaits) {
    const waiting = await effects.store.runs.lockNextInSession(run.sessionId);
    if (waiting) await admitOrHold(effects, waiting);
  }
  if (next.tenantWaits || next.sessionWaits || next.parentWaits) await admitWaitingRuns(effects, run.tenantId);
  effects.afterCommit((metrics) => metrics.runsEnded.inc({ status, tenant: metrics.tenantLabel(run.tenantId) }));
  return true;
}

/**
 * Admits a run whose session slot is free if its tenant has a slot (SPEC X5): it gets its
 * place and first job (`activateRun`). Otherwise it takes its session's slot and waits for
 * one of its tenant's runs to end or park. Answers its ordinal, or null while it waits.
 */
export async function admitOrHold(effects: Effects, run: Pick<RunRow, "id" | "tenantId" | "sessionId" | "input">): Promise<number | null> {
  if ((await effects.store.tenantAdmission.freeRunSlots(run.tenantId, effects.quotas.activeRuns)) > 0) return activateRun(effects, run);
  await effects.store.tenantAdmission.holdSessionSlot(run);
  return null;
}

/** Gives the tenant's free slots to its runs waiting for one, oldest first (SPEC X5). */
export async function admitWaitingRuns(effects: Effects, tenantId: TenantId): Promise<number> {
  const { tenantAdmission } = effects.store;
  const admitted = await tenantAdmission.runsWaitingForSlot(
    tenantId,
    await tenantAdmission.freeRunSlots(tenantId, effects.quotas.activeRuns),
  );
  for (const run of admitted) await activateRun(effects, run);
  return admitted.length;
}

const closingText = {
  interrupted: {
    running:
      "Interrupted: this call started but its completion was never confirmed (the worker running it stopped). Its outcome is unknown and it may have partly run. It will not be run again.",
    pending: "Not run: the run was interrupted before this call started.",
  },
  /** The run goes on with its next step after the interruption (D10): the model decides what to do. */
  interruptedCarryingOn: {
    running:
      "Interrupted: this call started but its completion was never confirmed (the worker running it stopped). Its outcome is unknown and it may have partly run. It will not be run again; check its effects before relying on them or asking for it again.",
    pending:
      "Not run: an earlier call of this batch was interrupted (its worker stopped) before this call started. Ask for it again if it is still needed.",
  },
  cancelled: {
    running: "Cancelled while running: the call was stopped and may have partly run.",
    pending: "Not run: the run was cancelled before this call started.",
  },
} as const;

/**
 * Gives every unfinished call of a run a terminal status and a truthful tool
 * message, so the history stays valid for every provider (D3, X2). `carryingOn`:
 * the run goes on after an interruption (D10), and the messages say so.
 */
export async function closeOpenCalls(
  effects: Effects,
  run: Pick<RunRow, "id" | "tenantId" | "sessionId"> & { ordinal: number },
  reason: "interrupted" | "cancelled",
  options: { carryingOn?: boolean } = {},
): Promise<number> {
  const open = await effects.store.toolCalls.lockOpenCalls(run.id);
  const texts = reason === "interrupted" && options.carryingOn ? closingText.interruptedCarryingOn : closingText[reason];
  for (const call of open) {
    const wasRunning = call.status === "running";
    const status = wasRunning && reason === "interrupted" ? "interrupted" : "cancelled";
    const code = wasRunning ? reason : `not_run_${reason}`;
    const content: ResultPart[] = [{ type: "text", text: texts[wasRunning ? "running" : "pending"] }];
    const answered = await effects.store.toolCalls.answerCall({
      run,
      call,
      outcome: { status, isError: true, errorCode: code, content },
      step: null,
    });
    effects.track(answered.events);
  }
  const awaiting = open.filter((call) => call.status === "awaiting_approval").map((call) => call.id);
  effects.track(await effects.store.approvals.closePendingApprovals(run, awaiting, `the run was ${reason}`));
  // A sub-agent works for its call only: it ends with it (A1). Parent before child is the lock order.
  for (const call of open) {
    if (call.childRunId) await cancelChildRun(effects, call.childRunId, reason);
  }
  return open.length;
}

async function cancelChildRun(effects: Effects, childRunId: RunId, reason: "interrupted" | "cancelled"): Promise<void> {
  const child = await effects.store.runs.lockRun(childRunId);
  if (!child || isTerminalRunStatus(child.status)) return;
  await cancelRunInTransaction(effects, child, { code: "parent_ended", message: `the parent run was ${reason}` }, true);
}

/**
 * Cancels a run inside the caller's transaction (SPEC X2): the partial assistant text
 * streamed so far, a terminal state for every unfinished call (and the sub-agent runs
 * they wait on, A1), the run's terminal state and its `run_end`; the workers are told
 * after the commit to abort the run's tools.
 */
export async function cancelRunInTransaction(
  fx: Effects,
  run: RunRow,
  error: { code: string; message: string },
  activateNext: boolean,
): Promise<void> {
  if (run.ordinal !== null) {
    const ordered = { ...run, ordinal: run.ordinal };
    await persistPartialText(fx, ordered);
    await closeOpenCalls(fx, ordered, "cancelled");
  }
  await endRun(fx, run, "cancelled", { error, activateNext });
  fx.cancel(run.id);
}

/** Keeps what the model had streamed of an unfinished step as its assistant message. */
async function persistPartialText(fx: Effects, run: RunRow & { ordinal: number }): Promise<void> {
  const cut = await fx.store.steps.closeStreamingStep(run);
  if (!cut || cut.text.length === 0) return;
  await fx.store.messages.insertMessage(
    { tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id },
    { runOrdinal: run.ordinal, stepIndex: cut.index, part: 1, callIndex: 0 },
    { role: "assistant", text: cut.text, toolCalls: [] },
  );
}
