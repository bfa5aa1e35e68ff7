import type { Job } from "bullmq";
import { isFoyaError } from "../../errors.js";
import { storableText } from "../../core/storable-text.js";
import { endRun } from "../../runs/run-lifecycle.js";
import { isConnectionError } from "../../startup/dependency-wait.js";
import { StaleWorkError } from "../../store/transact.js";
import type { JobOutcome } from "../job-context.js";
import type { JobDeps } from "../job-deps.js";
import type { PreparedStep } from "./start.js";
import type { StepEventSink } from "./step-event-sink.js";
import type { RunId } from "../../ids.js";
import type { StepJobData } from "../../queue/job-types.js";

/** A step attempt as its model call (call-model.ts) and its failure see it. */
export interface FailedAttempt {
  job: Pick<Job<StepJobData>, "id" | "attemptsMade" | "opts" | "data" | "updateData">;
  prepared: PreparedStep;
  signal: AbortSignal;
  /** The attempt's live events, once opened: what it buffered is written before the step ends. */
  sink: StepEventSink | undefined;
}

/**
 * An attempt of the step job that threw (process.ts). A provider error is thrown again,
 * so BullMQ retries; the retry is a new step attempt. On the last attempt, or at once for
 * `provider_config`, the step is marked `failed` and the run ends `failed` with the error's code.
 * An attempt that is retried gives the run's lease back first, so whichever worker takes the retry claims it at once.
 * Postgres or Redis away is no fault of the step: never fail the run for it, even on the last
 * attempt. The job fails; the run still needs it, and the sweeper enqueues it again (X4).
 */
export async function failStep(deps: Pick<JobDeps, "unitOfWork" | "logger">, attempt: FailedAttempt, error: unknown): Promise<JobOutcome> {
  await attempt.sink?.settle();
  if (attempt.signal.aborted) return { kind: "cancelled" };
  if (error instanceof StaleWorkError) return { kind: "stale" };
  const { job } = attempt;
  const { run, step } = attempt.prepared;
  const finalAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const permanent = isFoyaError(error) && error.code === "provider_config";
  const dependencyAway = !isFoyaError(error) && isConnectionError(error);
  if (dependencyAway) throw error;
  if (!finalAttempt && !permanent) {
    // The retry may be taken by another worker: given back, the run is claimed after the retry's backoff, not after
    // this attempt's lease (FOYA_LEASE_MS) runs out. Fenced: a run taken over meanwhile is not touched. Not given
    // back (Postgres refused), the lease runs out as it would have.
    await deps.unitOfWork.transactFenced((fx) => fx.store.runs.releaseLease(attempt.prepared.run)).catch(() => undefined);
    throw error;
  }
  const code = isFoyaError(error) ? error.code : "step_failed";
  const message = describeFailure(error, run.id);
  // The run's record tells tenants what happened; operators get the whole error, cause included.
  deps.logger.warn({ err: error, runId: run.id, stepIndex: step.index, code }, "model step failed on its last attempt");
  await deps.unitOfWork.transactFenced(async (fx) => {
    await fx.store.steps.endStepAttempt(run, step, { status: "failed" });
    if (!(await endRun(fx, run, "failed", { fence: run.fence, error: { code, message } }))) throw new StaleWorkError();
  });
  return { kind: "failed", code };
}

/**
 * The reason a tenant sees on the failed run. A `FoyaError`'s message is
 * written for tenants (provider failures are redacted where they are made,
 * S10); anything else may carry internals (a driver's message, SQL, a
 * connection string), so it is named only by the run, and logged whole.
 */
function describeFailure(error: unknown, runId: RunId): string {
  if (isFoyaError(error)) return storableText(error.message).slice(0, 2000);
  return `the model step failed on an internal error; the operator can find it in the log under run ${runId}`;
}
