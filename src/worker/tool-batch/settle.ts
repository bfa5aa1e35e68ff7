import { applyGateWrites } from "../../approvals/gate-batch.js";
import type { StepRef } from "../../core/events.js";
import { admitWaitingRuns } from "../../runs/run-lifecycle.js";
import type { ClaimedRun } from "../../store/runs.js";
import { StaleWorkError } from "../../store/transact.js";
import type { Effects } from "../../unit-of-work/unit-of-work.js";
import type { JobOutcome } from "../job-context.js";
import type { JobDeps } from "../job-deps.js";
import type { BatchAttempt } from "./batch-attempt.js";
import { closeBatchIfDone } from "./close-batch.js";
import { planRunnable, type RunnablePlan } from "./plan.js";
import { markWithinQuota, startingWindow } from "./start-calls.js";
import {
  type BatchChanges,
  commitCheckpoint,
  type PreparedCheckpoint,
  prepareCheckpoint,
  rememberCheckpoint,
  storePreparedBlobs,
} from "../../checkpoints/take-checkpoint.js";
import { CheckpointBaseMovedError, CheckpointBlobsMissingError, type CheckpointRow } from "../../store/checkpoints.js";
import { changesNothing } from "./workspace-changes.js";

/** `more`: calls approved while this job ran, planned, their first window marked running: back to phase 2. */
export type SettleOutcome = { kind: "ended"; outcome: JobOutcome } | { kind: "more"; plan: RunnablePlan };

type Settled =
  | { kind: "closed"; checkpoint: CheckpointRow | null }
  | { kind: "parked" }
  | { kind: "more"; plan: RunnablePlan; started: readonly string[] };

export type SettleDeps = Pick<JobDeps, "unitOfWork" | "config" | "store" | "knownTrees" | "logger" | "failpoints">;

/**
 * Phase 4 of the tool-batch job (process.ts), the settle transaction, reached when the last commit
 * could not close the batch: skips what an end-of-batch signal left (P6), runs calls
 * approved meanwhile, closes the batch when nothing is open, and otherwise parks the run
 * with no job (D6): the next decision re-arms it.
 */
export async function settleBatch(deps: SettleDeps, attempt: BatchAttempt, endBatch: boolean): Promise<SettleOutcome> {
  let prepared = attempt.checkpoint ? await prepareBatchCheckpoint(deps, attempt, changesOfAttempt(attempt)) : null;
  const settle = () => deps.unitOfWork.transactFenced((fx) => settleUnderLock(fx, deps, attempt, endBatch, prepared));
  let settled: Settled | null;
  try {
    settled = await settle();
  } catch (error) {
    prepared = await checkpointAfterRefusal(deps, attempt, prepared, error);
    settled = await settle();
  }
  if (settled === null) return { kind: "ended", outcome: { kind: "stale" } };
  if (settled.kind === "closed") {
    if (settled.checkpoint && prepared) rememberCheckpoint(deps, settled.checkpoint, prepared);
    return { kind: "ended", outcome: { kind: "committed", detail: "batch done" } };
  }
  if (settled.kind === "parked")
    return { kind: "ended", outcome: { kind: "committed", detail: "parked: waiting for approval or sub-agents" } };
  for (const id of settled.started) attempt.started.add(id);
  return { kind: "more", plan: settled.plan };
}

/**
 * Under the run's lock, so a decision committing at the same moment is seen either here or
 * by its own transaction, never by neither. The policies are read again: a policy changed
 * while the batch ran applies to the calls it plans now.
 */
async function settleUnderLock(
  fx: Effects,
  deps: Pick<JobDeps, "config" | "failpoints">,
  batch: BatchAttempt,
  endBatch: boolean,
  prepared: PreparedCheckpoint | null,
): Promise<Settled> {
  const { run, stepRef } = batch;
  if (!(await fx.store.runs.lockHeldRun(run))) throw new StaleWorkError();
  if (endBatch) await skipRemaining(fx, run, stepRef);
  const open = await fx.store.toolCalls.openCallsOfBatch(run.id, stepRef.index);
  if (open.some((call) => call.status === "running" && call.childRunId === null))
    throw new StaleWorkError("calls of this batch are still running");
  const queued = open.filter((call) => call.status === "queued").map((call) => call.id);
  const rules = await fx.store.runs.gateRules(batch.projectId, queued);
  const plan = await planRunnable(deps, batch, open, rules, (writes) => applyGateWrites(fx, batch, writes));
  if (!plan) throw new StaleWorkError();
  if (plan.groups[0]) {
    const marked = await markWithinQuota(fx, batch, startingWindow(plan.groups[0]));
    return { kind: "more", plan, started: marked.map((call) => call.id) };
  }
  let checkpoint: CheckpointRow | null = null;
  const commitTree = async () => {
    if (prepared) checkpoint = await commitCheckpoint(fx.store, prepared);
    deps.failpoints.hit("worker.checkpoint_rows_written");
  };
  if (await closeBatchIfDone(fx, deps, run, stepRef.index, commitTree)) return { kind: "closed", checkpoint };
  await parkBatch(fx, run, stepRef, plan.waitsForApproval);
  return { kind: "parked" };
}

/**
 * Parks the run: `next_job = null`, lease cleared. Waiting for a human shows as
 * `awaiting_approval`; waiting only for sub-agents, the run is still `running` (they work for it).
 */
async function parkBatch(fx: Effects, run: ClaimedRun, stepRef: StepRef, waitsForApproval: boolean): Promise<void> {
  const status = waitsForApproval ? "awaiting_approval" : "running";
  if (!(await fx.store.runs.parkRun(run, status))) throw new StaleWorkError();
  if (status === "awaiting_approval") {
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: stepRef, body: { type: "run_status", status } }]);
    // A run waiting for a person holds no worker: its slot goes to the tenant's next waiting run (SPEC X5).
    await admitWaitingRuns(fx, run.tenantId);
  }
}

/** After an end-of-batch signal, the remaining calls get `skipped` results so every call id has one (P6). */
async function skipRemaining(fx: Effects, run: ClaimedRun, stepRef: StepRef): Promise<void> {
  const content = [{ type: "text" as const, text: "Skipped: an earlier call in this batch ended the batch." }];
  const remaining = await fx.store.toolCalls.openCallsOfBatch(run.id, stepRef.index, ["queued", "awaiting_approval"]);
  const awaiting = remaining.filter((call) => call.status === "awaiting_approval").map((call) => call.id);
  fx.track(await fx.store.approvals.closePendingApprovals(run, awaiting, "an earlier call in this batch ended the batch"));
  for (const call of remaining) {
    const answered = await fx.store.toolCalls.answerCall({
      run,
      call,
      outcome: { status: "skipped", isError: true, errorCode: "skipped", content },
      step: stepRef,
    });
    fx.track(answered.events);
  }
}

/**
 * The batch's tree, captured once its calls have all ended and before the transaction that closes
 * it. A capture that fails (the folder unreadable, the run cancelled meanwhile) does not keep the
 * batch open: its results are committed, and the next batch's checkpoint holds its changes.
 */
/**
 * The checkpoint to write after the settle's commit refused the prepared one: the same, once the
 * content it found missing is stored (the calls' records did not store it); otherwise a walk of the
 * folder (another session's checkpoint landed since and the changed paths no longer apply, or a
 * file changed since its capture). Any other failure is the caller's.
 */
async function checkpointAfterRefusal(
  deps: SettleDeps,
  attempt: BatchAttempt,
  prepared: PreparedCheckpoint | null,
  error: unknown,
): Promise<PreparedCheckpoint> {
  const missing = error instanceof CheckpointBlobsMissingError;
  if (!missing && !(error instanceof CheckpointBaseMovedError)) throw error;
  if (missing && prepared && (await storePreparedBlobs(checkpointDeps(deps), prepared, attempt.signal))) return prepared;
  return prepareBatchCheckpoint(deps, attempt);
}

function checkpointDeps(deps: Pick<SettleDeps, "store" | "knownTrees" | "logger" | "config">) {
  return { ...deps, maxFileBytes: deps.config.workspaces.checkpointMaxFileBytes };
}

export async function prepareBatchCheckpoint(
  deps: Pick<SettleDeps, "store" | "knownTrees" | "logger" | "config">,
  batch: Pick<BatchAttempt, "run" | "projectId" | "stepRef" | "workspaceDir"> & { signal?: AbortSignal },
  changes?: BatchChanges,
): Promise<PreparedCheckpoint> {
  const { run } = batch;
  const scope = {
    tenantId: run.tenantId,
    projectId: batch.projectId,
    sessionId: run.sessionId,
    runId: run.id,
    stepIndex: batch.stepRef.index,
    workspaceDir: batch.workspaceDir,
    reason: "batch" as const,
  };
  try {
    const prepared = await prepareCheckpoint(checkpointDeps(deps), scope, batch.signal, changes);
    if (prepared.kind === "skipped")
      deps.logger.warn({ runId: run.id, reason: prepared.reason }, "the batch's workspace checkpoint was not taken");
    return prepared;
  } catch (error) {
    deps.logger.error({ err: error, runId: run.id }, "capturing the batch's workspace checkpoint failed");
    return { kind: "skipped", reason: "failed" };
  }
}

/** What the attempt's calls changed, for a checkpoint from their paths (SPEC W1). */
function changesOfAttempt(attempt: BatchAttempt): BatchChanges {
  return {
    paths: attempt.changes.paths(),
    ownCalls: [...attempt.started],
    changesNothing: (name) => changesNothing(attempt.tools, name),
  };
}
