import { and, asc, eq, sql } from "drizzle-orm";
import { isTerminalRunStatus } from "../core/run-status.js";
import { events, runs, steps } from "../db/schema.js";
import { notFound } from "../errors.js";
import type { Services } from "../services.js";
import { insertMessage } from "./history-store.js";
import { closeOpenCalls, endRun, type RunRow } from "./run-lifecycle.js";
import { transact, type Effects } from "./transact.js";

/**
 * Cancels a run in one transaction (SPEC X2): the partial assistant text streamed
 * so far, a terminal state for every unfinished call, the run's terminal state and
 * its `run_end` event. Then the workers are told through Redis to abort the tools.
 * Cancelling a terminal run answers it unchanged.
 */
export async function cancelRun(
  services: Pick<Services, "db" | "bus" | "dispatcher">,
  input: { tenantId: string; runId: string },
): Promise<RunRow> {
  return transact(services, async (fx) => {
    const [run] = await fx.tx
      .select()
      .from(runs)
      .where(and(eq(runs.id, input.runId), eq(runs.tenantId, input.tenantId)))
      .for("update");
    if (!run) throw notFound("run");
    if (isTerminalRunStatus(run.status)) return run;
    await cancelRunInTransaction(fx, run, { code: "cancelled", message: "cancelled by request" }, true);
    const [after] = await fx.tx.select().from(runs).where(eq(runs.id, run.id));
    return after ?? run;
  });
}

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
