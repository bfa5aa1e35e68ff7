import { lostJobCandidates, redispatchLostJob } from "../store/runs.js";
import { closeOpenCalls, endRun } from "../runs/run-lifecycle.js";
import { markLostCommands } from "../commands/command-store.js";
import { expireApprovals } from "../approvals/decide-approval.js";
import { transact } from "../store/transact.js";
import { pruneWebhookDeliveries } from "../webhooks/prune-deliveries.js";
import type { Services } from "../services.js";

/** After this many re-dispatches of the same work, the run fails visibly instead of looping. */
const maxRedispatches = 5;
const liveJobStates = new Set(["waiting", "active", "delayed", "prioritized", "waiting-children"]);

/**
 * Finds runs that need a job, hold no live lease, and have not moved for a
 * while (SPEC X4). It asks BullMQ about the job first: a job that is waiting
 * or active is left alone (a dead worker's active job comes back through
 * BullMQ's stall check); only lost work is enqueued again, under a new id.
 */
export async function sweepOnce(services: Services): Promise<number> {
  const { db, dispatcher, config } = services;
  const candidates = await lostJobCandidates(db.pool, config.sweepGraceMs, 200);
  let redispatched = 0;
  for (const run of candidates) {
    const state = await dispatcher.jobState({ runId: run.id, next: run.nextJob, redispatches: run.redispatches });
    if (liveJobStates.has(state)) continue;
    await transact(services, async (fx) => {
      if (run.redispatches >= maxRedispatches) {
        const owner = { id: run.id, tenantId: run.tenantId, sessionId: run.sessionId };
        // Every call gets a result, so the next turn's history stays valid.
        if (run.ordinal !== null) await closeOpenCalls(fx, { ...owner, ordinal: run.ordinal }, "interrupted");
        await endRun(fx, owner, "failed", {
          error: { code: "dispatch_exhausted", message: `the run's ${run.nextJob.kind} job was lost ${maxRedispatches} times` },
        });
        return;
      }
      const redispatches = await redispatchLostJob(fx.tx, { id: run.id, nextJob: run.nextJob, redispatches: run.redispatches });
      if (redispatches !== undefined) {
        fx.dispatch({ runId: run.id, next: run.nextJob, redispatches });
        redispatched++;
      }
    });
  }
  return redispatched;
}

/** Old webhook deliveries are pruned at most this often per worker. */
const pruneIntervalMs = 60_000;

export function startSweeper(services: Services): { stop(): void } {
  let running = false;
  let prunedAt = 0;
  const prune = async (): Promise<number> => {
    const { webhookRetentionDays } = services.config;
    if (webhookRetentionDays === 0 || Date.now() - prunedAt < pruneIntervalMs) return 0;
    prunedAt = Date.now();
    return pruneWebhookDeliveries(services.db.db, webhookRetentionDays * 24 * 3600 * 1000);
  };
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    Promise.all([sweepOnce(services), markLostCommands(services.db.db), expireApprovals(services), prune()])
      .then(([count, lost, expired, pruned]) => {
        if (pruned > 0) services.logger.info({ pruned }, "old webhook deliveries deleted");
        if (expired > 0) services.logger.info({ expired }, "approvals expired without a decision");
        if (count > 0) services.logger.info({ count }, "sweeper re-dispatched lost work");
        if (lost > 0) services.logger.warn({ lost }, "background commands lost with their worker");
      })
      .catch((error: unknown) => services.logger.warn({ err: error }, "sweep failed"))
      .finally(() => {
        running = false;
      });
  }, services.config.sweepIntervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
