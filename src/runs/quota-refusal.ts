import type { TenantQuotas } from "../core/tenant-quotas.js";
import type { Repositories } from "../store/store.js";
import type { TenantId } from "../ids.js";

/** What the quota checks read of a tenant's use. */
type UseReads = Pick<Repositories["tenantAdmission"], "tokensToday" | "storedBytes" | "countWaitingRuns">;

/**
 * Why a tenant may not start more work (SPEC X5), naming the quota and the use: the same words
 * whether a new turn is refused (429), a sub-agent is refused (an is_error result for the parent's
 * model), or a run is ended at its next step (`quota_exceeded`).
 */
export interface QuotaRefusal {
  quota: "queuedRuns" | "tokensPerDay" | "storageBytes";
  message: string;
  /** When trying again may succeed: the waiting runs' (a run ends within seconds to minutes), midnight UTC, an hour for storage (it frees only when the operator acts). */
  retryAfterSeconds: number;
}

/** The first of the tenant's use quotas (model tokens today, bytes kept) its use has reached; undefined while under both. */
export async function useRefusal(
  use: Pick<UseReads, "tokensToday" | "storedBytes">,
  tenantId: TenantId,
  quotas: TenantQuotas,
): Promise<QuotaRefusal | undefined> {
  if (quotas.tokensPerDay > 0) {
    const tokens = await use.tokensToday(tenantId);
    if (tokens >= quotas.tokensPerDay) {
      return {
        quota: "tokensPerDay",
        message: `this tenant used ${tokens} model tokens today (UTC), its tokensPerDay quota is ${quotas.tokensPerDay}; work starts again at midnight UTC`,
        retryAfterSeconds: secondsToMidnightUtc(),
      };
    }
  }
  if (quotas.storageBytes > 0) {
    const bytes = await use.storedBytes(tenantId);
    if (bytes >= quotas.storageBytes) {
      return {
        quota: "storageBytes",
        message: `this tenant keeps ${bytes} bytes of file contents and artifacts, its storageBytes quota is ${quotas.storageBytes}; an operator must raise it or remove data`,
        retryAfterSeconds: 3600,
      };
    }
  }
  return undefined;
}

/** Why a new run (a turn, or a sub-agent) may not start: too many runs waiting for a slot, or a use quota reached. */
export async function newRunRefusal(
  use: UseReads,
  tenantId: TenantId,
  quotas: TenantQuotas,
  /** The tenant's waiting runs, when the caller read them already. */
  waitingRuns?: number,
): Promise<QuotaRefusal | undefined> {
  const waiting = waitingRuns ?? (await use.countWaitingRuns(tenantId));
  if (waiting >= quotas.queuedRuns) {
    return {
      quota: "queuedRuns",
      message: `this tenant already has ${waiting} runs waiting for a slot, its queuedRuns quota; start this run when some have run`,
      retryAfterSeconds: 30,
    };
  }
  return useRefusal(use, tenantId, quotas);
}

/** Seconds to midnight UTC, when the day's token count starts again. */
function secondsToMidnightUtc(now = new Date()): number {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((midnight - now.getTime()) / 1000));
}
