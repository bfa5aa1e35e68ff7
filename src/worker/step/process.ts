import type { Job } from "bullmq";
import type { StepJobData } from "../../queue/job-types.js";
import { delayJob, holdingLease, withRunAbort } from "../hold-run.js";
import { jobOwner, type JobContext, type JobOutcome } from "../job-context.js";
import { toolsOfRun } from "../run-tools.js";
import { endIfOverBudget } from "./budget.js";
import { claimStepJob } from "./claim.js";
import { commitStepJob } from "./commit.js";
import { failStep } from "./fail.js";
import { openStepEvents, prepareStep } from "./start.js";
import type { StepEventSink } from "./step-event-sink.js";
import { modelOf, streamModel } from "./stream.js";

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
  return holdingLease(context.leases, owner, async () => {
    const overBudget = await endIfOverBudget(deps, claim.run); // the tenant's use quotas (X5)
    if (overBudget) return overBudget;
    const prepared = await prepareStep(context, claim, tools); // 2. start: session, history, exposed tools
    return withRunAbort(context.aborts, claim.run.id, async (signal) => {
      let sink: StepEventSink | undefined;
      try {
        const model = modelOf(deps, prepared.session);
        sink = openStepEvents(deps, prepared, signal); // its first write is the step's start
        const streamed = await streamModel(deps, prepared, model, sink, signal); // 3. stream
        return await commitStepJob(deps, prepared, streamed); // 4. commit
      } catch (error) {
        return failStep(deps, { job, prepared, signal, sink }, error); // retries, or the run fails
      }
    });
  });
}
