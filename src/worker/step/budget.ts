import { useRefusal } from "../../runs/quota-refusal.js";
import { endRun } from "../../runs/run-lifecycle.js";
import type { ClaimedRun } from "../../store/runs.js";
import { StaleWorkError } from "../../store/transact.js";
import { effectiveQuotas } from "../../tenants/tenant-settings.js";
import type { JobOutcome } from "../job-context.js";
import type { JobDeps } from "../job-deps.js";

export type BudgetDeps = Pick<JobDeps, "config" | "store" | "unitOfWork" | "tenantSettings">;

/**
 * The tenant's use quotas, checked at every step's claim (SPEC X5), sub-agents' steps included:
 * a run whose tenant used its tokensPerDay or keeps its storageBytes calls the model no more, and
 * ends `failed`, `quota_exceeded`, the quota named. Only read when a quota is set; the tenant's
 * settings come from the process's cache. Undefined: the step goes on.
 */
export async function endIfOverBudget(deps: BudgetDeps, run: ClaimedRun): Promise<JobOutcome | undefined> {
  const cached = effectiveQuotas(deps.config, await deps.tenantSettings.get(run.tenantId));
  if (cached.tokensPerDay === 0 && cached.storageBytes === 0) return undefined;
  if (!(await useRefusal(deps.store.tenantAdmission, run.tenantId, cached))) return undefined;
  // Ending the run cannot be undone: decide on the settings as they are now, not as cached up to a
  // TTL ago (an operator who just lifted the quota would otherwise see the run fail).
  const quotas = effectiveQuotas(deps.config, await deps.tenantSettings.fresh(run.tenantId));
  const refusal = await useRefusal(deps.store.tenantAdmission, run.tenantId, quotas);
  if (!refusal) return undefined;
  const ended = await deps.unitOfWork.transactFenced(async (fx) => {
    const error = { code: "quota_exceeded", message: `the run stopped before its next model step: ${refusal.message}` };
    if (!(await endRun(fx, run, "failed", { fence: run.fence, error }))) throw new StaleWorkError();
    return true;
  });
  return ended ? { kind: "failed", code: "quota_exceeded" } : { kind: "stale" };
}
