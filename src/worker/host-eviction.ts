import { evictHostCopy, hostCopies } from "../workspace/host-copies.js";
import type { JobDeps } from "./job-deps.js";

/**
 * Keeps a host's workspaces under its disk budget (SPEC W3, `FOYA_WORKSPACES_DISK_BUDGET_BYTES`):
 * every copy is rebuildable from its checkpoints, so when the copies placed here (sized by their
 * latest checkpoints) pass the budget, the ones used longest ago are evicted until they fit. A
 * project is evicted only while idle (no active run, no running background command: the release
 * is one guarded statement) and only the copy of the released placement is removed; its next
 * batch places it again, here or on another host, and rebuilds it there.
 */
export function startHostEviction(
  deps: Pick<JobDeps, "config" | "store" | "logger" | "metrics">,
  self: { hostId: string },
): { stop(): Promise<void> } {
  const budget = deps.config.workspaces.diskBudgetBytes;
  if (budget === 0) return { stop: async () => {} };
  let current: Promise<number> | undefined;
  const timer = setInterval(() => {
    if (current) return;
    current = evictOverBudget(deps, { hostId: self.hostId, budget })
      .catch((error: unknown) => {
        deps.logger.warn({ err: error }, "evicting workspaces over the disk budget failed");
        return 0;
      })
      .finally(() => {
        current = undefined;
      });
    // As often as the sweeper looks for lost work: a pass is a read and a listing of markers.
  }, deps.config.workers.sweepIntervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await current;
    },
  };
}

/** One pass: answers how many copies went. */
async function evictOverBudget(
  deps: Pick<JobDeps, "config" | "store" | "logger" | "metrics">,
  host: { hostId: string; budget: number },
): Promise<number> {
  const root = deps.config.workspaces.dir;
  const placed = new Map((await deps.store.placements.hostPlacements(host.hostId)).map((row) => [row.projectId, row.epoch]));
  // Only copies of placements this host still holds count: others are stale and go with the copies' sweep.
  const copies = (await hostCopies(root)).filter((copy) => placed.get(copy.projectId) === copy.epoch);
  const sizes = await deps.store.placements.copySizes(copies.map((copy) => copy.projectId));
  let total = copies.reduce((sum, copy) => sum + (sizes.get(copy.projectId) ?? 0), 0);
  let evicted = 0;
  for (const copy of copies) {
    if (total <= host.budget) break;
    const released = await deps.store.placements.evictPlacement({ projectId: copy.projectId, hostId: host.hostId, epoch: copy.epoch });
    if (!released) continue;
    if (await evictHostCopy(root, copy, copy.epoch)) {
      total -= sizes.get(copy.projectId) ?? 0;
      evicted++;
      deps.metrics.sweeperActions.inc({ action: "workspace_evicted" });
      deps.logger.info({ projectId: copy.projectId, bytes: sizes.get(copy.projectId) ?? 0 }, "idle workspace evicted over the disk budget");
    }
  }
  return evicted;
}
