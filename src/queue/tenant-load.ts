import type { TenantId } from "../ids.js";
/**
 * How many runs each tenant has working (admitted, queued for a worker or running), as a
 * BullMQ job priority (SPEC X5): a job of a tenant with fewer working runs is served before
 * the jobs of a tenant with more, whatever their order in the queue. A tenant alone still
 * gets every worker slot (all its jobs share one priority, served in order), and a newcomer's
 * job jumps a flood's. Read at most twice a second per process, for every tenant in one
 * statement; a job's priority is as fresh as that, which is all fairness needs.
 */
export interface TenantLoad {
  /** BullMQ priority for a job of the tenant: 1 + its working runs (lower is served first). */
  priority(tenantId: TenantId): number;
}

const refreshMs = 500;
/** BullMQ's largest priority. */
const maxPriority = 2_097_152;

/** `read` answers each tenant's working runs (`workingRunsByTenant` in src/store/tenant-admission.ts). */
export function createTenantLoad(read: () => Promise<ReadonlyMap<string, number>>, onError: (error: unknown) => void): TenantLoad {
  let counts: ReadonlyMap<string, number> = new Map<string, number>();
  let readAt = 0;
  let reading = false;
  const refresh = () => {
    if (reading || Date.now() - readAt < refreshMs) return;
    reading = true;
    readAt = Date.now();
    read()
      .then((working) => {
        counts = working;
      })
      .catch(onError)
      .finally(() => {
        reading = false;
      });
  };
  return {
    priority(tenantId) {
      refresh();
      return Math.min(maxPriority, 1 + (counts.get(tenantId) ?? 0));
    },
  };
}
