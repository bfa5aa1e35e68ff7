import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
import type { ResultPart } from "../core/history.js";
import { isTerminalRunStatus, runStatusesLeadingTo, type TerminalRunStatus } from "../core/run-status.js";
import { deliverToParentCall } from "../agents/deliver-child-result.js";
import { events, runs, sessions, steps, toolCalls } from "../db/schema.js";
import type { NextJob } from "../queue/job-types.js";
import { answerCall } from "./answer-call.js";
import { cancelPendingApprovals } from "../approvals/cancel-approvals.js";
import { insertMessage } from "./history-store.js";
import type { Effects } from "./transact.js";

/**
 * Run transitions shared by the API and the workers. Each is a guarded update
 * inside the caller's transaction; none publishes or enqueues by itself.
 */

export type RunRow = typeof runs.$inferSelect;

/**
 * Makes a queued run the session's active run: gives it its place in history,
 * writes the user's input, announces `run_start`, and records the first step
 * job as the run's next job.
 */
export async function activateRun(effects: Effects, run: Pick<RunRow, "id" | "tenantId" | "sessionId" | "input">): Promise<number> {
  const { tx } = effects;
  const [session] = await tx
    .update(sessions)
    .set({ runCount: sql`${sessions.runCount} + 1`, activeRunId: run.id })
    .where(eq(sessions.id, run.sessionId))
    .returning({ runCount: sessions.runCount });
  if (!session) throw new Error(`session ${run.sessionId} vanished`);
  const next: NextJob = { kind: "step", stepIndex: 0 };
  await tx.update(runs).set({ ordinal: session.runCount, nextJob: next, redispatches: 0, updatedAt: sql`now()` }).where(eq(runs.id, run.id));
  await insertMessage(
    tx,
    { tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id },
    { runOrdinal: session.runCount, stepIndex: -1, part: 0, callIndex: 0 },
    { role: "user", text: run.input },
  );
  await effects.emit(run.tenantId, run.sessionId, [
    { runId: run.id, step: null, body: { type: "run_start", runId: run.id, ordinal: session.runCount } },
  ]);
  effects.dispatch({ runId: run.id, next, redispatches: 0 });
  return session.runCount;
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
  const conditions = [eq(runs.id, run.id), inArray(runs.status, runStatusesLeadingTo(status))];
  if (options.fence !== undefined) conditions.push(eq(runs.fence, options.fence));
  const updated = await effects.tx
    .update(runs)
    .set({
      status,
      nextJob: null,
      leaseOwner: null,
      leaseUntil: null,
      fence: sql`${runs.fence} + 1`,
      error: options.error ?? null,
      endedAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(and(...conditions))
    .returning({ id: runs.id });
  if (updated.length === 0) return false;
  await effects.emit(run.tenantId, run.sessionId, [
    { runId: run.id, step: null, body: { type: "run_end", status, ...(options.error ? { error: options.error } : {}) } },
  ]);
  await releaseSession(effects, run.sessionId, run.id, options.activateNext ?? true);
  await deliverToParentCall(effects, run.id, status, options.error);
  return true;
}

/** Clears the session's active run and starts the oldest run waiting behind it, if any. */
async function releaseSession(effects: Effects, sessionId: string, runId: string, activateNext: boolean): Promise<void> {
  const { tx } = effects;
  const [session] = await tx
    .update(sessions)
    .set({ activeRunId: null })
    .where(and(eq(sessions.id, sessionId), eq(sessions.activeRunId, runId)))
    .returning({ deletedAt: sessions.deletedAt });
  if (!session || session.deletedAt || !activateNext) return;
  const [waiting] = await tx
    .select()
    .from(runs)
    .where(and(eq(runs.sessionId, sessionId), eq(runs.status, "queued"), isNull(runs.ordinal)))
    .orderBy(asc(runs.createdAt))
    .limit(1)
    .for("update");
  if (waiting) await activateRun(effects, waiting);
}

const closingText = {
  interrupted: {
    running:
      "Interrupted: this call started but its completion was never confirmed (the worker running it stopped). Its outcome is unknown and it may have partly run. It will not be run again.",
    pending: "Not run: the run was interrupted before this call started.",
  },
  cancelled: {
    running: "Cancelled while running: the call was stopped and may have partly run.",
    pending: "Not run: the run was cancelled before this call started.",
  },
} as const;

/**
 * Gives every unfinished call of a run a terminal status and a truthful tool
 * message, so the history stays valid for every provider (D3, X2).
 */
export async function closeOpenCalls(
  effects: Effects,
  run: Pick<RunRow, "id" | "tenantId" | "sessionId"> & { ordinal: number },
  reason: "interrupted" | "cancelled",
): Promise<number> {
  const open = await effects.tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, run.id), inArray(toolCalls.status, ["queued", "awaiting_approval", "running"])))
    .orderBy(asc(toolCalls.stepIndex), asc(toolCalls.callIndex))
    .for("update");
  for (const call of open) {
    const wasRunning = call.status === "running";
    const status = wasRunning && reason === "interrupted" ? "interrupted" : "cancelled";
    const code = wasRunning ? reason : `not_run_${reason}`;
    const content: ResultPart[] = [{ type: "text", text: closingText[reason][wasRunning ? "running" : "pending"] }];
    await effects.tx
      .update(toolCalls)
      .set({ status, isError: true, errorCode: code, result: content, endedAt: sql`now()` })
      .where(eq(toolCalls.id, call.id));
    await answerCall(effects, run, call, { status, isError: true, errorCode: code, content }, null);
  }
  await cancelPendingApprovals(
    effects,
    run,
    open.filter((call) => call.status === "awaiting_approval").map((call) => call.id),
    `the run was ${reason}`,
  );
  // A sub-agent works for its call only: it ends with it (A1). Parent before child is the lock order.
  for (const call of open) {
    if (call.childRunId) await cancelChildRun(effects, call.childRunId, reason);
  }
  return open.length;
}

async function cancelChildRun(effects: Effects, childRunId: string, reason: "interrupted" | "cancelled"): Promise<void> {
  const [child] = await effects.tx.select().from(runs).where(eq(runs.id, childRunId)).for("update");
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
  const [step] = await fx.tx
    .select()
    .from(steps)
    .where(and(eq(steps.runId, run.id), eq(steps.index, run.stepIndex), eq(steps.status, "streaming")))
    .for("update");
  if (!step) return;
  const deltas = await fx.tx
    .select({ text: sql<string>`${events.data}->>'text'` })
    .from(events)
    .where(
      and(
        eq(events.sessionId, run.sessionId),
        eq(events.runId, run.id),
        eq(events.stepIndex, step.index),
        eq(events.attempt, step.attempt),
        eq(events.type, "text_delta"),
      ),
    )
    .orderBy(asc(events.seq));
  const text = deltas.map((d) => d.text).join("");
  await fx.tx.update(steps).set({ status: "completed", finishReason: "cancelled", endedAt: sql`now()` }).where(eq(steps.id, step.id));
  if (text.length > 0) {
    await insertMessage(
      fx.tx,
      { tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id },
      { runOrdinal: run.ordinal, stepIndex: step.index, part: 1, callIndex: 0 },
      { role: "assistant", text, toolCalls: [] },
    );
  }
}
