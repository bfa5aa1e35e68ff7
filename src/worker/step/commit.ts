import { endRun } from "../../runs/run-lifecycle.js";
import type { StepResult } from "../../store/steps.js";
import { StaleWorkError, withRetry } from "../../store/transact.js";
import type { JobDeps } from "../job-deps.js";
import type { JobOutcome } from "../job-context.js";
import { askAgain, justActivatedTools } from "./ask-again.js";
import { preGrantFirstGroup } from "./pre-grant.js";
import type { PreparedStep } from "./start.js";
import type { StreamedStep } from "./stream.js";

/**
 * Phase 4 of the step job (process.ts), the commit: one fenced statement (`commitStep`) ends the
 * step, stores the assistant message and its calls as `queued`, writes the sink's leftovers and
 * `step_end`, and names the batch as the run's next job; the batch is enqueued beside the
 * publish. The calls are judged first with the policies the claim read, so the batch's claim
 * can start a first group that is allowed whole (`preGrantFirstGroup`). With no calls the same
 * statement runs in a transaction that also ends the run `completed`.
 */
export type CommitStepDeps = Pick<JobDeps, "store" | "unitOfWork" | "bus" | "dispatcher">;

export async function commitStepJob(deps: CommitStepDeps, prepared: PreparedStep, streamed: StreamedStep): Promise<JobOutcome> {
  const { run, step, session, project } = prepared;
  const { toolCalls } = streamed;
  const mode = { approvalMode: session.approvalMode, workspaceDir: project.workspacePath };
  const preGrants = await preGrantFirstGroup(mode, prepared.policies, prepared.tools.executor, toolCalls);
  const result: StepResult = { ...streamed, preGrants };
  if (toolCalls.length === 0 && streamed.text.trim() === "" && step.attempt === 1 && (await justActivatedTools(deps, run.id, step.index)))
    return askAgain(deps, prepared, streamed.pendingEvents);
  const committed = toolCalls.length > 0 ? await commitWithCalls(deps, prepared, result) : await commitLastStep(deps, prepared, result);
  return committed ? { kind: "committed", detail: `${toolCalls.length} tool calls` } : { kind: "stale" };
}

async function commitWithCalls(deps: CommitStepDeps, prepared: PreparedStep, result: StepResult): Promise<boolean> {
  const { run, step } = prepared;
  const committed = await withRetry(() => deps.store.steps.commitStep(run, step, result));
  if (!committed) return false;
  const { events, placement } = committed;
  const batch = { kind: "batch", stepIndex: step.index } as const;
  await Promise.all([
    deps.bus.publish(events),
    deps.dispatcher.dispatch([
      { runId: run.id, tenantId: run.tenantId, next: batch, redispatches: 0, ...(placement ? { placement } : {}) },
    ]),
  ]);
  return true;
}

/** The last step: the run ends with it, in the same transaction. */
async function commitLastStep(deps: Pick<JobDeps, "unitOfWork">, prepared: PreparedStep, result: StepResult): Promise<boolean> {
  const { run, step } = prepared;
  const committed = await deps.unitOfWork.transactFenced(async (fx) => {
    const committed = await fx.store.steps.commitStep(run, step, result);
    if (!committed) throw new StaleWorkError();
    fx.track(committed.events);
    if (!(await endRun(fx, run, "completed", { fence: run.fence }))) throw new StaleWorkError();
    return true;
  });
  return committed === true;
}
