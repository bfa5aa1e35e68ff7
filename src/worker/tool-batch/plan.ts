import { applyGateWrites, judgeBatch, type CallGrant, type GateRules, type GateWrite } from "../../approvals/gate-batch.js";
import type { BatchClaim, CallRow } from "../../store/runs.js";
import { StaleWorkError } from "../../store/transact.js";
import type { JobDeps } from "../job-deps.js";
import type { BatchAttempt, BatchScope } from "./batch-attempt.js";
import { startWindow, type StartCallDeps } from "./start-calls.js";
import { planLanes } from "./tool-lanes.js";

export interface RunnablePlan {
  /** Groups to run now, in model order (P2); the first is already marked running by the caller. */
  groups: CallRow[][];
  grants: Map<string, CallGrant>;
  /** Whether a call waits for a human; otherwise what is still open waits for sub-agents. */
  waitsForApproval: boolean;
}

/**
 * Phase 1 of the tool-batch job (process.ts), after the claim: the gate and the plan of the calls the claim did not start, then
 * the first group's first window marked `running` before any tool starts. When the claim
 * started the first group itself (calls the step's commit found allowed, `preGrantFirstGroup`),
 * that group goes first and the rest follows it in model order. Null when the batch was taken over.
 */
export async function planFirstGroups(
  deps: StartCallDeps & Pick<JobDeps, "config">,
  attempt: BatchAttempt,
  claimed: BatchClaim,
): Promise<RunnablePlan | null> {
  const preStarted = claimed.calls.filter((call) => claimed.startedIds.has(call.id));
  if (preStarted.length > 0) await deps.bus.publish(claimed.startedEvents);
  const rest = claimed.calls.filter((call) => !claimed.startedIds.has(call.id));
  const plan = await planRunnable(deps, attempt, rest, claimed, (writes) =>
    deps.unitOfWork.transactFenced(async (fx) => {
      if (!(await fx.store.runs.lockHeldRun(attempt.run))) throw new StaleWorkError();
      await applyGateWrites(fx, attempt, writes);
      return true;
    }),
  );
  if (plan === null) return null;
  if (preStarted.length > 0) {
    // The claim started the first group (a whole lane of at most five calls).
    const grants = new Map(plan.grants);
    for (const call of preStarted) {
      attempt.started.add(call.id);
      grants.set(call.id, { argumentsRaw: call.argumentsRaw, edited: false, network: call.preGrant?.network ?? false });
    }
    return { ...plan, groups: [preStarted, ...plan.groups], grants };
  }
  if (plan.groups[0] && !(await startWindow(deps, attempt, plan.groups[0]))) return null;
  return plan;
}

/**
 * Gates the batch's queued calls, then plans what may run now: lanes in model
 * order, up to and including the first group that holds a call awaiting
 * approval. Later calls wait for it, so no call overtakes an earlier one the
 * model meant to happen first (P2, D6). What the gate writes goes through
 * `apply`; null when that found the batch taken over.
 */
export async function planRunnable(
  deps: Pick<JobDeps, "config">,
  batch: BatchScope,
  calls: readonly CallRow[],
  rules: GateRules,
  apply: (writes: GateWrite[]) => Promise<unknown>,
): Promise<RunnablePlan | null> {
  const { executor } = batch.tools;
  const { grants, asked, writes } = await judgeBatch(
    { config: deps.config, executor },
    { ...gateInputOf(batch), calls: calls.filter((call) => call.status === "queued") },
    rules,
  );
  if (writes.length > 0 && (await apply(writes)) === null) return null;
  // The gate may have answered some calls; only those it granted, or that still wait (for a decision or a sub-agent), stay open.
  const waitsForApproval = (call: CallRow) => asked.has(call.id) || call.status === "awaiting_approval";
  const open = calls.filter(
    (call) => grants.has(call.id) || waitsForApproval(call) || (call.status === "running" && call.childRunId !== null),
  );
  const lanes = planLanes(open, (call) => {
    const grant = grants.get(call.id);
    return grant !== undefined && executor.isParallel({ callId: call.callId, name: call.name, argumentsRaw: grant.argumentsRaw });
  });
  const groups: CallRow[][] = [];
  for (const lane of lanes) {
    const ready = lane.filter((call) => grants.has(call.id));
    if (ready.length > 0) groups.push(ready);
    if (ready.length !== lane.length) break;
  }
  return { groups, grants, waitsForApproval: open.some(waitsForApproval) };
}

function gateInputOf(batch: BatchScope) {
  return {
    run: batch.run,
    approvalMode: batch.approvalMode,
    projectId: batch.projectId,
    workspaceDir: batch.workspaceDir,
    stepRef: batch.stepRef,
  };
}
