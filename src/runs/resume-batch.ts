import type { Effects } from "../unit-of-work/unit-of-work.js";
import type { NextJob } from "../core/next-job.js";
import type { RunId, SessionId, TenantId } from "../ids.js";

/**
 * Gives a parked run (no job: waiting for a decision, D6, or for sub-agents, A1) its
 * batch back through the outbox, so any worker resumes it. A run whose batch job still
 * runs needs nothing: that job sees the change when it settles. The caller holds the
 * run's lock, so a batch parking at the same moment is seen here or sees the change.
 */
export async function resumeParkedBatch(
  fx: Effects,
  run: { id: RunId; tenantId: TenantId; sessionId: SessionId; status: string; fence: number; nextJob: NextJob | null },
  stepIndex: number,
): Promise<void> {
  if (run.nextJob !== null || (run.status !== "awaiting_approval" && run.status !== "running")) return;
  const next = await fx.store.runs.resumeParkedRun(run, stepIndex);
  if (!next) return;
  if (run.status === "awaiting_approval") {
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: null, body: { type: "run_status", status: "running" } }]);
  }
  fx.dispatch({ runId: run.id, tenantId: run.tenantId, next, redispatches: 0 });
}
