import { forgetHostCopy, hostWorkspacePath } from "../workspace/host-copies.js";
import { projectTrashRoot } from "../workspace/project-trash.js";
import { removeTreeGradually } from "../workspace/remove-tree.js";
import { cleanHostCopies } from "./host-copies-cleanup.js";

import type { JobDeps } from "./job-deps.js";

/**
 * How long one slice of a removal may hold the worker's event loop: short enough that its
 * jobs, lease renewals and liveness record never notice, long enough to remove a few hundred
 * entries per slice.
 */
const sliceMs = 5;

/** How often a worker looks at the copies its host holds for deleted projects' and stale ones (`cleanHostCopies`). */
const copiesLookMs = 60_000;

/**
 * Removes deleted projects' workspaces and trash for good (SPEC F4), on the workers, never in
 * the API: `DELETE /v1/projects/:id` only marks the project deleted (it answers 404 from then
 * on) and returns. Every worker looks, as often as its sweeper runs, for a deleted project whose
 * files are still there, claims it under a lease (one worker per project), removes its trash
 * and then its workspace in slices of at most `sliceMs` (src/workspace/remove-tree.ts),
 * renewing the lease between slices, and marks the files removed. A worker that dies mid-way
 * leaves its lease to lapse and the next claim, on any worker, resumes from what is left; a
 * removal that fails (the file system refused) is logged and tried again once its lease lapsed,
 * until it is done.
 *
 * The files are on the host the project is placed on (SPEC W3), at its own root: while that host
 * is live only its workers claim the removal (any worker when the project is placed nowhere live).
 * Copies other hosts still keep, and copies of projects placed elsewhere since, are removed by
 * each host's own look at its copies, every `copiesLookMs` (`cleanHostCopies`).
 */
export function startProjectRemoval(
  services: Pick<JobDeps, "config" | "logger" | "store" | "failpoints" | "metrics">,
  self: { workerId: string; hostId: string },
): { stop(): Promise<void> } {
  const { config, logger } = services;
  const removals = services.store.projectRemoval;
  const { leaseMs } = config.workers;
  const stopping = new AbortController();
  let current: Promise<void> | undefined;

  const removeOne = async (): Promise<boolean> => {
    const claimer = { owner: self.workerId, hostId: self.hostId, leaseMs, livenessTimeoutMs: config.workers.livenessTimeoutMs };
    const project = await removals.claimProjectRemoval(claimer);
    if (!project) return false;
    const root = config.workspaces.dir;
    const ref = { tenantId: project.tenantId, projectId: project.id };
    const workspace = hostWorkspacePath(root, ref);
    let renewedAt = performance.now();
    const betweenSlices = async (removedSoFar: number) => {
      // A worker killed in the middle of a removal, for the crash tests.
      if (removedSoFar > 0) services.failpoints.hit("worker.project_removal_slice");
      if (performance.now() - renewedAt < leaseMs / 3) return;
      if (!(await removals.renewProjectRemoval(project.id, self.workerId, leaseMs))) throw new Error("the removal's claim was lost");
      renewedAt = performance.now();
    };
    const options = { sliceMs, betweenSlices, signal: stopping.signal };
    const started = performance.now();
    try {
      const removed =
        (await removeTreeGradually(projectTrashRoot(root, workspace), options)) + (await removeTreeGradually(workspace, options));
      await forgetHostCopy(root, ref);
      if (await removals.finishProjectRemoval(project.id, self.workerId)) {
        services.metrics.sweeperActions.inc({ action: "project_files_removed" });
        logger.info(
          { projectId: project.id, tenantId: project.tenantId, removed, ms: Math.round(performance.now() - started) },
          "deleted project's files removed",
        );
      }
      return true;
    } catch (error) {
      if (stopping.signal.aborted) {
        // Handed back at once: another worker resumes without waiting for the lease.
        await removals.releaseProjectRemoval(project.id, self.workerId).catch(() => {});
        return false;
      }
      // Left to its lease: any worker tries again once it lapses.
      logger.warn(
        { err: error, projectId: project.id, tenantId: project.tenantId },
        "removing a deleted project's files failed; retried later",
      );
      return false;
    }
  };

  const lookAtCopies = everySoOften(copiesLookMs, () => cleanHostCopies(services, self.hostId, stopping.signal));
  const tick = async () => {
    while (!stopping.signal.aborted && (await removeOne()));
    if (!stopping.signal.aborted) await lookAtCopies();
  };
  const timer = setInterval(() => {
    if (current) return;
    current = tick()
      .catch((error: unknown) => logger.warn({ err: error }, "looking for deleted projects' files failed"))
      .finally(() => {
        current = undefined;
      });
  }, config.workers.sweepIntervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      stopping.abort();
      await current;
    },
  };
}

/** `work` at its first call, then at most once per `ms`. */
function everySoOften(ms: number, work: () => Promise<unknown>): () => Promise<void> {
  let doneAt = Number.NEGATIVE_INFINITY;
  return async () => {
    if (performance.now() - doneAt < ms) return;
    doneAt = performance.now();
    await work();
  };
}
