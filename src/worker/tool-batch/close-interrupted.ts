import { closeOpenCalls, endRun } from "../../runs/run-lifecycle.js";
import type { BatchClaim, ClaimedRun } from "../../store/runs.js";
import { StaleWorkError } from "../../store/transact.js";
import type { Effects } from "../../unit-of-work/unit-of-work.js";
import type { JobOutcome } from "../job-context.js";
import type { JobDeps } from "../job-deps.js";
import type { ClaimedBatch } from "./claim.js";
import { closeBatchIfDone } from "./close-batch.js";
import { prepareBatchCheckpoint } from "./settle.js";
import { commitCheckpoint, rememberCheckpoint } from "../../checkpoints/take-checkpoint.js";
import type { CheckpointRow } from "../../store/checkpoints.js";
import type { BatchScope } from "./batch-attempt.js";

/**
 * Whether a call of the batch was running when its worker stopped (D3). A call waiting on its
 * sub-agent is `running` but lost nothing with a worker: its child carries on (A1). Calls this
 * claim started itself were not running before it (it starts none after a crash).
 */
export function hasInterruptedCall(claimed: BatchClaim): boolean {
  return claimed.calls.some((call) => call.status === "running" && call.childRunId === null && !claimed.startedIds.has(call.id));
}

/**
 * Closes a batch found interrupted at its claim, in one fenced transaction (D3, D10). The layer of
 * its interrupted shell call was settled before the claim, so a batch that may have changed the
 * workspace closes with its checkpoint, as any other (W1).
 */
export async function closeInterrupted(
  deps: Pick<JobDeps, "unitOfWork" | "config" | "store" | "knownTrees" | "logger">,
  claim: ClaimedBatch,
  scope: BatchScope,
): Promise<JobOutcome> {
  const prepared = scope.checkpoint ? await prepareBatchCheckpoint(deps, scope) : null;
  let checkpoint: CheckpointRow | null = null;
  const after = await deps.unitOfWork.transactFenced(async (fx) => {
    const closed = await closeInterruptedBatch(fx, deps, claim.run, claim.stepIndex);
    if (prepared) checkpoint = await commitCheckpoint(fx.store, prepared);
    return closed;
  });
  if (after === null) return { kind: "stale" };
  if (checkpoint && prepared) rememberCheckpoint(deps, checkpoint, prepared);
  return after === "continued"
    ? { kind: "committed", detail: "carried on after an interrupted call" }
    : { kind: "gone", reason: "interrupted" };
}

/**
 * A call of this batch was running when its worker stopped: it is marked `interrupted`
 * and never run again (D3), the calls that had not started are closed as not run, and
 * the run either ends `interrupted` or, with `onInterrupted: "continue"` and fewer than
 * the allowed interruptions so far, goes on with its next step, whose model sees the
 * honest tool messages and decides (D10).
 */
async function closeInterruptedBatch(
  fx: Effects,
  deps: Pick<JobDeps, "config">,
  run: ClaimedRun,
  stepIndex: number,
): Promise<"continued" | "ended"> {
  if (!(await fx.store.runs.lockHeldRun(run))) throw new StaleWorkError();
  const { maxContinuedInterruptions } = deps.config.runs;
  const count = run.onInterrupted === "continue" ? await fx.store.runs.countInterruption(run, maxContinuedInterruptions) : undefined;
  await closeOpenCalls(fx, run, "interrupted", { carryingOn: count !== undefined });
  if (count !== undefined) {
    if (!(await closeBatchIfDone(fx, deps, run, stepIndex))) throw new StaleWorkError("calls of the interrupted batch are still open");
    const reason = `carrying on after an interrupted call (${count} of ${maxContinuedInterruptions} allowed)`;
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: null, body: { type: "run_status", status: "running", reason } }]);
    return "continued";
  }
  const limitNote =
    run.onInterrupted === "continue" ? ` (the run had already carried on after ${maxContinuedInterruptions} interruptions)` : "";
  await endRun(fx, run, "interrupted", {
    fence: run.fence,
    error: { code: "worker_lost", message: `a tool call was running when its worker stopped; it will not be run again${limitNote}` },
  });
  return "ended";
}
