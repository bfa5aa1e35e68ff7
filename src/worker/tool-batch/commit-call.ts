import type { StepRef } from "../../core/events.js";
import { newId } from "../../ids.js";
import type { CallRow, ClaimedRun } from "../../store/runs.js";
import { withRetry } from "../../store/transact.js";
import type { StoredToolResult } from "../../tools/tool.js";
import type { JobDeps } from "../job-deps.js";
import { commitThroughOutage } from "./commit-through-outage.js";

export type CommitCallDeps = Pick<JobDeps, "config" | "store" | "logger" | "bus" | "dispatcher">;

/** `finished`: this commit also handed the run to its next step. */
export type CommittedCall = "committed" | "finished" | "stale";

/**
 * Phase 3 of the tool-batch job (process.ts), the call's commit: stores one call's result (SPEC L2, T3) with `answerCall`, only
 * if this attempt still owns the call (fence). If no other call of the batch is open and the
 * run may take another step, the same statement hands the run to that step; otherwise the
 * settle transaction (settle.ts) closes the batch. A batch that may have changed the workspace
 * (`mayClose` false) always closes there, with its checkpoint (SPEC W1).
 */
export async function commitCall(
  deps: CommitCallDeps,
  run: ClaimedRun,
  call: CallRow,
  result: StoredToolResult,
  batch: { stepRef: StepRef; mayClose: boolean },
): Promise<CommittedCall> {
  const { stepRef } = batch;
  // A layered command's records come with the ids they were written under before its apply (layer-journal.ts).
  const fileChanges = (result.fileChanges ?? []).map((change) => ({ ...change, id: change.id ?? newId("fch") }));
  const outcome = {
    status: result.isError ? "failed" : "succeeded",
    isError: result.isError === true,
    errorCode: result.errorCode ?? null,
    content: result.content,
    ...(result.displayDiff ? { diff: result.displayDiff } : {}),
    fileChanges,
  } as const;
  const next = { kind: "step", stepIndex: call.stepIndex + 1 } as const;
  const handOff =
    batch.mayClose && next.stepIndex < deps.config.runs.maxStepsPerRun ? { fence: run.fence, current: run.nextJob, next } : undefined;
  // The tool has run: its result waits out a Postgres outage rather than being lost to one.
  const answered = await commitThroughOutage(
    () =>
      withRetry(() =>
        deps.store.toolCalls.answerCall({ run, call, outcome, step: stepRef, execFence: run.fence, ...(handOff ? { handOff } : {}) }),
      ),
    {
      leaseMs: deps.config.workers.leaseMs,
      onWait: (error, retryInMs) =>
        deps.logger.warn(
          { err: error, runId: run.id, callId: call.callId, retryInMs },
          "Postgres unreachable: the call's result waits to be stored",
        ),
    },
  );
  if (!answered.answered) {
    // Another attempt closed the call meanwhile (taken for dead, or cancelled): its changes are in the
    // workspace all the same, so their records are kept, under the call (SPEC X7, F3).
    if (fileChanges.length > 0) await keepRecordsOfClosedCall(deps, run, call, result.fileChanges ?? []);
    return "stale";
  }
  const published = deps.bus.publish(answered.events);
  if (!answered.handedOff) {
    await published;
    return "committed";
  }
  await Promise.all([published, deps.dispatcher.dispatch([{ runId: run.id, tenantId: run.tenantId, next, redispatches: 0 }])]);
  return "finished";
}

async function keepRecordsOfClosedCall(
  deps: Pick<JobDeps, "store" | "logger">,
  run: ClaimedRun,
  call: CallRow,
  records: NonNullable<StoredToolResult["fileChanges"]>,
): Promise<void> {
  await deps.store.toolCalls
    .insertFileChanges({ tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id, toolCallId: call.id }, records)
    .catch((error: unknown) =>
      deps.logger.error(
        { err: error, runId: run.id, callId: call.callId },
        "the file changes of a call closed by another attempt were not recorded",
      ),
    );
}
