import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { runs } from "../db/schema.js";
import type { NextJob } from "../queue/job-types.js";
import type { Effects } from "./transact.js";

/**
 * Gives a parked run (no job: waiting for a decision, D6, or for sub-agents, A1) its
 * batch back through the outbox, so any worker resumes it. A run whose batch job still
 * runs needs nothing: that job sees the change when it settles. The caller holds the
 * run's lock, so a batch parking at the same moment is seen here or sees the change.
 */
export async function resumeParkedBatch(
  fx: Effects,
  run: { id: string; tenantId: string; sessionId: string; status: string; fence: number; nextJob: NextJob | null },
  stepIndex: number,
): Promise<void> {
  if (run.nextJob !== null || (run.status !== "awaiting_approval" && run.status !== "running")) return;
  // The fence names the parked attempt, so each resume gets a job id of its own.
  const next: NextJob = { kind: "batch", stepIndex, resume: run.fence };
  const [resumed] = await fx.tx
    .update(runs)
    .set({ status: "running", nextJob: next, redispatches: 0, updatedAt: sql`now()` })
    .where(and(eq(runs.id, run.id), inArray(runs.status, ["awaiting_approval", "running"]), isNull(runs.nextJob)))
    .returning({ id: runs.id });
  if (!resumed) return;
  if (run.status === "awaiting_approval") {
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: null, body: { type: "run_status", status: "running" } }]);
  }
  fx.dispatch({ runId: run.id, next, redispatches: 0 });
}
