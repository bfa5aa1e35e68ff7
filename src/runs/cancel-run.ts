import { isTerminalRunStatus } from "../core/run-status.js";
import { FoyaError, notFound } from "../errors.js";
import { cancelRunInTransaction, type RunRow } from "./run-lifecycle.js";
import type { UnitOfWork } from "../unit-of-work/unit-of-work.js";
import type { RunId, TenantId } from "../ids.js";

/**
 * Cancels a run in one transaction (SPEC X2): the partial assistant text streamed
 * so far, a terminal state for every unfinished call, the run's terminal state and
 * its `run_end` event. Then the workers are told through Redis to abort the tools.
 * The run's row lock orders racing cancels (D11): one cancels; every other, and
 * any cancel of a run already ended, changes nothing and answers 409 with the
 * run's state.
 */
export async function cancelRun(services: { unitOfWork: UnitOfWork }, input: { tenantId: TenantId; runId: RunId }): Promise<RunRow> {
  return services.unitOfWork.transact(async (fx) => {
    const run = await fx.store.runs.lockRunOfTenant(input.tenantId, input.runId);
    if (!run) throw notFound("run");
    if (isTerminalRunStatus(run.status)) {
      throw new FoyaError("conflict", `run ${run.id} is already ${run.status}; nothing was cancelled`, {
        current: { id: run.id, status: run.status, endedAt: run.endedAt?.toISOString() ?? null },
      });
    }
    await cancelRunInTransaction(fx, run, { code: "cancelled", message: "cancelled by request" }, true);
    return (await fx.store.runs.readRun(run.id)) ?? run;
  });
}
