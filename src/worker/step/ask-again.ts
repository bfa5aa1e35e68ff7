import type { EventBody } from "../../core/events.js";
import { StaleWorkError } from "../../store/transact.js";
import { toolSearchName } from "../../tools/tool-registry.js";
import type { JobOutcome } from "../job-context.js";
import type { JobDeps } from "../job-deps.js";
import type { PreparedStep } from "./start.js";
import type { RunId } from "../../ids.js";

/** Whether the previous step's batch activated deferred tools through tool_search (R5). */
export async function justActivatedTools(deps: Pick<JobDeps, "store">, runId: RunId, stepIndex: number): Promise<boolean> {
  return stepIndex > 0 && deps.store.toolCalls.succeededCallNamed(runId, stepIndex - 1, toolSearchName);
}

/**
 * A step that answered nothing right after tool_search activated tools is run
 * once more instead of ending the turn empty (R5): nothing of this attempt is
 * committed, and the same step is dispatched again under a new job id; the
 * next attempt commits whatever it answers.
 */
export async function askAgain(deps: Pick<JobDeps, "unitOfWork">, prepared: PreparedStep, pendingEvents: EventBody[]): Promise<JobOutcome> {
  const { run, step, stepRef } = prepared;
  const released = await deps.unitOfWork.transactFenced(async (fx) => {
    const redispatches = await fx.store.runs.releaseForRetry(run);
    if (redispatches === undefined) throw new StaleWorkError();
    await fx.store.steps.endStepAttempt(run, step, { status: "completed", finishReason: "empty_asked_again" });
    await fx.emit(run.tenantId, run.sessionId, [
      ...pendingEvents.map((body) => ({ runId: run.id, step: stepRef, body })),
      {
        runId: run.id,
        step: stepRef,
        body: { type: "step_end", stepIndex: step.index, attempt: step.attempt, finishReason: "empty_asked_again", toolCalls: 0 },
      },
    ]);
    fx.dispatch({ runId: run.id, tenantId: run.tenantId, next: { kind: "step", stepIndex: step.index }, redispatches });
    return true;
  });
  return released ? { kind: "committed", detail: "asked again" } : { kind: "stale" };
}
