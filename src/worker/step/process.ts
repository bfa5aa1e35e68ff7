import type { Job } from "bullmq";
import type { StepJobData } from "../../queue/job-types.js";
import { delayJob, holdingLease, withRunAbort } from "../hold-run.js";
import { jobOwner, type JobContext, type JobOutcome } from "../job-context.js";
import { toolsOfRun } from "../run-tools.js";
import { endIfOverBudget } from "./budget.js";
import { claimStepJob } from "./claim.js";
import { commitStepJob } from "./commit.js";
import { callModel } from "./call-model.js";
import { failStep, type FailedAttempt } from "./fail.js";
import { prepareStep } from "./start.js";
import { waitForProvider } from "./wait-for-provider.js";

/**
 * One model step (SPEC D1), phase by phase as docs/architecture/jobs.md lists them. A
 * redelivered step streams again under a new attempt number; only one attempt can commit (D4, X1).
 */
export async function processStepJob(context: JobContext, job: Job<StepJobData>, token: string | undefined): Promise<JobOutcome> {
  const { deps } = context;
  // Dies holding the job in BullMQ before the run is claimed: no lease names this worker (D9).
  deps.failpoints.hit("worker.step_job_taken");
  const owner = jobOwner(context, job);
  const tools = await toolsOfRun(context, job.data.runId); // 0. tools, before any lease (MCP servers may take seconds)
  const claim = await claimStepJob(context, job.data, owner); // 1. claim, with the history not read yet
  if (claim.kind === "busy") return delayJob(job, token, claim.retryInMs);
  if (claim.kind === "gone") return claim;
  const outcome = await holdingLease(context.leases, owner, async () => {
    const overBudget = await endIfOverBudget(deps, claim.run); // the tenant's use quotas (X5)
    if (overBudget) return overBudget;
    const prepared = await prepareStep(context, claim, tools); // 2. start: session, history, exposed tools
    return withRunAbort(context.aborts, claim.run.id, async (signal) => {
      const attempt: FailedAttempt = { job, prepared, signal, sink: undefined };
      try {
        const called = await callModel(deps, attempt); // 3. admission to a provider's budget, then the stream
        if (called.kind === "wait") return await waitForProvider(deps, attempt, called); // lease given back
        return await commitStepJob(deps, prepared, called.streamed); // 4. commit
      } catch (error) {
        return failStep(deps, attempt, error); // retries, or the run fails
      }
    });
  });
  // A step waiting for its provider holds no worker slot while it waits (PR3).
  return outcome.kind === "busy" ? delayJob(job, token, outcome.retryInMs) : outcome;
}
