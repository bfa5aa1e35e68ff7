import type { EventBody } from "../../core/events.js";
import { releaseForRetry } from "../../store/runs.js";
import { endStepAttempt } from "../../store/steps.js";
import { succeededCallNamed } from "../../store/tool-calls.js";
import { StaleWorkError, transactFenced, type TransactDeps } from "../../store/transact.js";
import { toolSearchName } from "../../tools/tool-registry.js";
import type { JobOutcome } from "../job-context.js";
import type { JobDeps } from "../job-deps.js";
import type { PreparedStep } from "./start.js";

/** Whether the previous step's batch activated deferred tools through tool_search (R5). */
export async function justActivatedTools(deps: Pick<JobDeps, "db">, runId: string, stepIndex: number): Promise<boolean> {
  return stepIndex > 0 && succeededCallNamed(deps.db.db, runId, stepIndex - 1, toolSearchName);
}

/**
 * A step that answered nothing right after tool_search activated tools is run
 * once more instead of ending the turn empty (R5): nothing of this attempt is
 * committed, and the same step is dispatched again under a new job id; the
 * next attempt commits whatever it answers.
 */
export async function askAgain(deps: TransactDeps, prepared: PreparedStep, pendingEvents: EventBody[]): Promise<JobOutcome> {
  const { run, step, stepRef } = prepared;
  const released = await transactFenced(deps, async (fx) => {
    const redispatches = await releaseForRetry(fx.tx, run);
    if (redispatches === undefined) throw new StaleWorkError();
    await endStepAttempt(fx.tx, run, step, { status: "completed", finishReason: "empty_asked_again" });
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
