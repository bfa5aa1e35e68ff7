import type { Job } from "bullmq";
import type { ToolBatchJobData } from "../../queue/job-types.js";
import { delayJob, holdingLease, withRunAbort } from "../hold-run.js";
import { jobOwner, type JobContext, type JobOutcome } from "../job-context.js";
import { toolsOfRun } from "../run-tools.js";
import { claimToolBatch, scopeOfBatch } from "./claim.js";
import { closeInterrupted, hasInterruptedCall } from "./close-interrupted.js";
import { planFirstGroups } from "./plan.js";
import { runGroups } from "./run-groups.js";
import { settleBatch } from "./settle.js";
import { toolContextsOf } from "./tool-context.js";
import { createWorkspaceChangeLog } from "./workspace-changes.js";
import { ensureWorkspacePresent } from "./workspace-present.js";
import { claimHostCopy } from "../../workspace/host-copies.js";

/**
 * The tool-batch job: the tool calls of one model response, phase by phase as
 * docs/architecture/jobs.md lists them. A call is marked `running` before its tool starts
 * and gets its result in the same statement as its terminal status; a call found `running`
 * at the claim was never confirmed and is never run again (D3).
 */
export async function processToolBatchJob(context: JobContext, job: Job<ToolBatchJobData>, token: string | undefined): Promise<JobOutcome> {
  const { deps } = context;
  const owner = jobOwner(context, job);
  const tools = await toolsOfRun(context, job.data.runId); // 0. tools, before any lease (MCP servers may take seconds)
  const claim = await claimToolBatch(context, job.data, owner); // 1. claim
  if (claim.kind === "busy") return delayJob(job, token, claim.retryInMs);
  if (claim.kind === "gone") return claim;
  const scope = await scopeOfBatch(context, claim, tools);
  // 1a. The host's copy must be this placement's (W3): a copy of an earlier one is set aside, never used.
  const copy = await claimHostCopy(
    deps.config.workspaces.dir,
    { tenantId: scope.run.tenantId, projectId: scope.projectId },
    scope.placement.epoch,
    deps.currentCopies,
  );
  // What an interrupted batch changed is in a copy only if the batch ran in this one; on a dead host it is lost with it.
  const ranHere = copy.kind === "current" || copy.kind === "adopted";
  if (hasInterruptedCall(claim.extra) && ranHere) return closeInterrupted(deps, claim, scope);
  return holdingLease(context.leases, owner, () =>
    withRunAbort(context.aborts, scope.run.id, async (signal) => {
      // A batch that takes no checkpoint but changed files anyway (a read tool appending a marker) leaves this host's tree stale.
      const forget = scope.checkpoint ? undefined : () => deps.knownTrees.forget(scope.projectId);
      const attempt = { ...scope, owner, signal, started: new Set<string>(), changes: createWorkspaceChangeLog(forget) };
      if (!(await ensureWorkspacePresent(deps, attempt, copy))) return { kind: "stale" }; // 1b. the workspace is there (W1)
      // Interrupted on a host that is gone: closed here, on the copy rebuilt from the latest checkpoint (nothing new to keep).
      if (hasInterruptedCall(claim.extra)) return closeInterrupted(deps, claim, { ...scope, checkpoint: false });
      let plan = await planFirstGroups(deps, attempt, claim.extra); // 1. gate, plan, first window started
      if (plan === null) return { kind: "stale" };
      const contextFor = await toolContextsOf(deps, context.commands, attempt);
      for (;;) {
        const ran = await runGroups(deps, attempt, plan, contextFor); // 2. calls start, 3. each runs and commits
        if (ran.kind === "ended") return ran.outcome;
        const settled = await settleBatch(deps, attempt, ran.endBatch); // 4. settle: skip, run what was approved, close or park
        if (settled.kind === "ended") return settled.outcome;
        plan = settled.plan;
      }
    }),
  );
}
