import type { RunRow } from "../store/runs.js";
import { admitWaitingRuns, closeOpenCalls, endRun } from "../runs/run-lifecycle.js";
import { expireApprovals } from "../approvals/decide-approval.js";
import type { Effects } from "../unit-of-work/unit-of-work.js";
import type { Liveness } from "./liveness.js";
import { pruneTrash } from "../workspace/project-trash.js";
import { rollForwardLayers } from "./roll-forward-layers.js";
import type { JobDeps } from "./job-deps.js";
import type { NextJob } from "../core/next-job.js";
import type { RunId } from "../ids.js";

/** What the sweeper uses. */
export type SweeperDeps = SweepDeps & Pick<JobDeps, "bus" | "metrics" | "logger" | "callLayers">;

/** What one sweep for lost jobs uses. */
type SweepDeps = Pick<JobDeps, "store" | "unitOfWork" | "dispatcher" | "config">;

/** After this many re-dispatches of the same work, the run fails visibly instead of looping. */
const maxRedispatches = 5;
const liveJobStates = new Set(["waiting", "active", "delayed", "prioritized", "waiting-children"]);

/**
 * Finds runs that need a job, hold no live lease, and have not moved for a
 * while (SPEC X4). It asks BullMQ about the job first: a job that is waiting
 * or active is left alone (a dead worker's active job comes back through
 * BullMQ's stall check), unless it is active on a worker found dead (its
 * liveness record ended): that one, like lost work, is enqueued again at
 * once, under a new id.
 */
export async function sweepOnce(services: SweepDeps): Promise<number> {
  const { store, dispatcher, config } = services;
  const candidates = await store.runs.lostJobCandidates(config.workers.sweepGraceMs, 200);
  const holders = await Promise.all(
    candidates.map((run) => dispatcher.jobHolder({ runId: run.id, next: run.nextJob, redispatches: run.redispatches })),
  );
  // A job still "active" on a worker found dead would come back only after its BullMQ lock and the stall check (D9).
  const ended = await store.workers.endedWorkers(
    holders.flatMap((holder) => (holder.state === "active" && holder.processedBy ? [holder.processedBy] : [])),
  );
  // Slots a crash or a race left free while runs of the tenant wait for one (SPEC X5).
  for (const tenantId of await store.tenantAdmission.tenantsWithWaitingRuns()) {
    await services.unitOfWork.transact((fx) => admitWaitingRuns(fx, tenantId));
  }
  let redispatched = 0;
  for (const [i, run] of candidates.entries()) {
    const { state, processedBy } = holders[i] as { state: string; processedBy: string | null };
    if (liveJobStates.has(state) && !(state === "active" && processedBy !== null && ended.has(processedBy))) continue;
    if (await services.unitOfWork.transact((fx) => redispatchOrFail(fx, { ...run, nextJob: run.nextJob }))) redispatched++;
  }
  return redispatched;
}

type LostRun = Pick<RunRow, "id" | "tenantId" | "sessionId" | "ordinal" | "redispatches"> & { nextJob: NextJob };

/**
 * Enqueues a run's lost job again under a new id, or, after `maxRedispatches` for the same
 * job, fails the run visibly instead of looping. Answers whether it enqueued.
 */
async function redispatchOrFail(fx: Effects, run: LostRun): Promise<boolean> {
  if (run.redispatches >= maxRedispatches) {
    const owner = { id: run.id, tenantId: run.tenantId, sessionId: run.sessionId };
    // Every call gets a result, so the next turn's history stays valid.
    if (run.ordinal !== null) await closeOpenCalls(fx, { ...owner, ordinal: run.ordinal }, "interrupted");
    await endRun(fx, owner, "failed", {
      error: { code: "dispatch_exhausted", message: `the run's ${run.nextJob.kind} job was lost ${maxRedispatches} times` },
    });
    return false;
  }
  const redispatches = await fx.store.runs.redispatchLostJob(run);
  if (redispatches === undefined) return false;
  fx.dispatch({ runId: run.id, tenantId: run.tenantId, next: run.nextJob, redispatches });
  return true;
}

/**
 * Takes over the work of workers found dead (SPEC D9): each worker whose liveness record
 * is older than the timeout is marked lost (one sweeper wins it), the runs it held get a
 * `run_status` `recovering` event, lose their lease and get their job again at once (the
 * dead worker's BullMQ job would come back only after its lock and the stall check), and
 * its background commands are marked lost. All in one transaction: a failure leaves the
 * worker to the next sweep, and the leases remain the last word.
 * Only a process whose own record is healthy judges (`trustsItsView`).
 */
async function takeOverDeadWorkers(
  services: Pick<JobDeps, "unitOfWork" | "config" | "logger">,
  self: { workerId: string; liveness: Pick<Liveness, "trustsItsView"> },
): Promise<{ workers: number; runs: number; commands: number }> {
  const taken = { workers: 0, runs: 0, commands: 0 };
  if (!self.liveness.trustsItsView()) return taken;
  await services.unitOfWork.transact(async (fx) => {
    const { livenessTimeoutMs } = services.config.workers;
    const lost = await fx.store.workers.claimLostWorkers(livenessTimeoutMs, self.workerId);
    const moved = new Set<RunId>();
    for (const worker of lost) {
      const reason = `its worker ${worker.id} stopped renewing its liveness record ${(worker.silentMs / 1000).toFixed(1)} s ago`;
      services.logger.warn({ workerId: worker.id, silentMs: Math.round(worker.silentMs) }, "worker found dead; taking over its work");
      for (const run of await fx.store.runs.releaseRunsOfWorker(worker.id)) {
        moved.add(run.id);
        await fx.emit(run.tenantId, run.sessionId, [
          { runId: run.id, step: null, body: { type: "run_status", status: "recovering", reason } },
        ]);
        if (run.nextJob) await redispatchOrFail(fx, { ...run, nextJob: run.nextJob });
        taken.runs++;
      }
      taken.commands += await fx.store.commands.markCommandsOfWorkerLost(worker.id);
      taken.workers++;
    }
    // A host with no live worker left is dead (SPEC W3): its projects move, in this transaction.
    for (const host of new Set(lost.map((worker) => worker.host)))
      taken.runs += await releaseDeadHost(fx, { hostId: host, livenessTimeoutMs, moved });
  });
  return taken;
}

/**
 * Releases the placements of a host that has no live worker left (SPEC W3) and enqueues again the
 * batches its queue held for them, under a new id: each is placed on a live host (the dispatch
 * places it), which rebuilds the workspace from its latest checkpoint before running anything.
 * Calls that were running there were interrupted with their worker, above. Answers how many runs moved.
 */
async function releaseDeadHost(fx: Effects, host: { hostId: string; livenessTimeoutMs: number; moved: Set<RunId> }): Promise<number> {
  const released = await fx.store.placements.releaseHostPlacements(host.hostId, host.livenessTimeoutMs);
  if (released.length === 0) return 0;
  let moved = 0;
  for (const runId of await fx.store.placements.batchRunsOfProjects(released.map((placement) => placement.projectId))) {
    // Those held by the dead workers were enqueued again with their release.
    if (host.moved.has(runId)) continue;
    const run = await fx.store.runs.readRun(runId);
    const next = run?.nextJob;
    if (!run || next?.kind !== "batch") continue;
    if (await redispatchOrFail(fx, { ...run, nextJob: next })) moved++;
  }
  return moved;
}

/** Records of workers ended this long ago are deleted. */
const endedWorkerRetentionMs = 24 * 3600 * 1000;

/** Old webhook deliveries are pruned at most this often per worker. */
const pruneIntervalMs = 60_000;
/** Projects' trash folders are walked at most this often per worker (a walk reads every project's trash records). */
const trashPruneIntervalMs = 3600_000;

export function startSweeper(services: SweeperDeps, self: { workerId: string; liveness: Liveness }): { stop(): void } {
  const sweeps = startSweeps(services);
  // Dead workers are looked for as often as the living renew, so their work moves within about the timeout plus one interval.
  const deaths = startDeathWatch(services, self);
  return {
    stop: () => {
      clearInterval(sweeps);
      clearInterval(deaths);
    },
  };
}

/** Runs `tick` every `intervalMs`, never two at once, without holding the process open. */
function everyInterval(intervalMs: number, tick: () => Promise<void>): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void tick().finally(() => {
      running = false;
    });
  }, intervalMs);
  timer.unref();
  return timer;
}

function startSweeps(services: SweeperDeps): NodeJS.Timeout {
  let prunedAt = 0;
  let trashPrunedAt = 0;
  const pruneTrashes = async (): Promise<number> => {
    const { trashRetentionDays, dir: workspacesDir } = services.config.workspaces;
    if (trashRetentionDays === 0 || Date.now() - trashPrunedAt < trashPruneIntervalMs) return 0;
    trashPrunedAt = Date.now();
    return pruneTrash(workspacesDir, trashRetentionDays * 24 * 3600 * 1000);
  };
  const prune = async (): Promise<number> => {
    const { retentionDays: webhookRetentionDays } = services.config.webhooks;
    if (Date.now() - prunedAt < pruneIntervalMs) return 0;
    prunedAt = Date.now();
    await services.store.workers.pruneEndedWorkers(endedWorkerRetentionMs);
    if (webhookRetentionDays === 0) return 0;
    return services.store.webhookDeliveries.pruneWebhookDeliveries(webhookRetentionDays * 24 * 3600 * 1000);
  };
  // Another worker on this host that died mid-command left its layer: its project's next batch settles it first, and
  // a project with no next batch has it settled here, within a sweep (a look at one folder when there is none).
  const sweep = () =>
    Promise.all([
      sweepOnce(services),
      services.store.commands.markLostCommands(),
      expireApprovals(services),
      prune(),
      pruneTrashes(),
      rollForwardLayers(services),
    ])
      .then(([count, lost, expired, pruned, trashed, layers]) => {
        const actions = services.metrics.sweeperActions;
        actions.inc({ action: "layers_settled" }, layers);
        actions.inc({ action: "redispatched" }, count);
        actions.inc({ action: "commands_lost" }, lost);
        actions.inc({ action: "approvals_expired" }, expired);
        actions.inc({ action: "webhook_deliveries_pruned" }, pruned);
        actions.inc({ action: "trash_entries_pruned" }, trashed);
        if (trashed > 0) services.logger.info({ trashed }, "trash entries past their retention deleted");
        if (pruned > 0) services.logger.info({ pruned }, "old webhook deliveries deleted");
        if (expired > 0) services.logger.info({ expired }, "approvals expired without a decision");
        if (count > 0) services.logger.info({ count }, "sweeper re-dispatched lost work");
        if (lost > 0) services.logger.warn({ lost }, "background commands lost with their worker");
      })
      .catch((error: unknown) => services.logger.warn({ err: error }, "sweep failed"));
  return everyInterval(services.config.workers.sweepIntervalMs, sweep);
}

function startDeathWatch(services: SweeperDeps, self: { workerId: string; liveness: Liveness }): NodeJS.Timeout {
  const judge = () =>
    takeOverDeadWorkers(services, self)
      .then((taken) => {
        services.metrics.sweeperActions.inc({ action: "workers_taken_over" }, taken.workers);
        services.metrics.sweeperActions.inc({ action: "runs_recovered" }, taken.runs);
        services.metrics.sweeperActions.inc({ action: "commands_lost" }, taken.commands);
        if (taken.workers > 0) services.logger.warn(taken, "took over the work of dead workers");
      })
      .catch((error: unknown) => services.logger.warn({ err: error }, "looking for dead workers failed"));
  return everyInterval(services.config.workers.livenessIntervalMs, judge);
}
