import { endRun } from "../../runs/run-lifecycle.js";
import type { ClaimedRun } from "../../store/runs.js";
import { StaleWorkError } from "../../store/transact.js";
import type { Effects } from "../../unit-of-work/unit-of-work.js";
import type { JobDeps } from "../job-deps.js";

/**
 * When no call of the batch is open any more, hands the run to its next step
 * (or fails it at the step limit). Guarded by fence and `next_job`, so only one
 * transaction can do it. Answers whether the batch is closed.
 */
export async function closeBatchIfDone(
  fx: Effects,
  deps: Pick<JobDeps, "config">,
  run: ClaimedRun,
  stepIndex: number,
  beforeClosing?: () => Promise<void>,
): Promise<boolean> {
  if ((await fx.store.toolCalls.openCallsOfBatch(run.id, stepIndex)).length > 0) return false;
  // In the same transaction as the close: a closed batch has its checkpoint (SPEC W1).
  await beforeClosing?.();
  const nextIndex = stepIndex + 1;
  const { maxStepsPerRun } = deps.config.runs;
  if (nextIndex >= maxStepsPerRun) {
    if (
      !(await endRun(fx, run, "failed", {
        fence: run.fence,
        error: { code: "max_steps_exceeded", message: `the run reached the limit of ${maxStepsPerRun} steps` },
      }))
    ) {
      throw new StaleWorkError();
    }
    return true;
  }
  const next = await fx.store.runs.moveToNextStep(run, nextIndex);
  if (!next) throw new StaleWorkError();
  fx.dispatch({ runId: run.id, tenantId: run.tenantId, next, redispatches: 0 });
  return true;
}
