import type { CallRow } from "../../store/runs.js";
import { StaleWorkError, withRetry } from "../../store/transact.js";
import type { Effects } from "../../unit-of-work/unit-of-work.js";
import type { JobDeps } from "../job-deps.js";
import type { BatchAttempt } from "./batch-attempt.js";
import { maxParallelCalls } from "./tool-lanes.js";

/**
 * Phase 2 of the tool-batch job (process.ts), calls start: a call is marked `running` when its tool
 * starts, never before (D3): a group's first window of calls together, each later call of
 * the group as a slot frees up. A crash then reports "may have partly run" only for calls
 * that did start; the rest are "not run". Marking is fenced and announced (`tool_update`).
 */

type Marking = Pick<BatchAttempt, "run" | "stepRef" | "callQuota" | "owner">;

/** What marking calls `running` uses: one statement outside a transaction, or a transaction under a `toolCalls` quota. */
export type StartCallDeps = Pick<JobDeps, "store" | "unitOfWork" | "bus">;

/** The calls of a group that start at once: at most `maxParallelCalls` (P3). */
export function startingWindow(group: readonly CallRow[]): CallRow[] {
  return group.slice(0, maxParallelCalls);
}

/** Marks a group's starting window `running`; false when the batch was taken over. */
export async function startWindow(deps: StartCallDeps, attempt: BatchAttempt, group: readonly CallRow[]): Promise<boolean> {
  const marked = await markRunning(deps, attempt, startingWindow(group));
  if (marked === null) return false;
  for (const call of marked) attempt.started.add(call.id);
  return true;
}

/** Makes sure a call is marked `running` before its tool starts: at once if its window was, else once a slot frees. */
export async function startCall(deps: StartCallDeps, attempt: BatchAttempt, call: CallRow): Promise<"started" | "stale" | "cancelled"> {
  if (attempt.started.has(call.id)) return "started";
  const marked = await startWhenSlotFree(deps, attempt, call);
  if (marked === "started") attempt.started.add(call.id);
  return marked;
}

/**
 * Marks calls `running` before their tools start, under the batch's fence, and announces it:
 * all of them, or under a `toolCalls` quota as many as the tenant has slots for (the first
 * ones, in model order). Null when the batch was taken over.
 */
async function markRunning(deps: StartCallDeps, batch: Marking, calls: readonly CallRow[]): Promise<readonly CallRow[] | null> {
  const { run, stepRef } = batch;
  if (batch.callQuota === 0) {
    const events = await withRetry(() => deps.store.toolCalls.markCallsRunning(run, calls, batch.owner, stepRef));
    if (!events) return null;
    await deps.bus.publish(events);
    return calls;
  }
  return deps.unitOfWork.transactFenced((fx) => markWithinQuota(fx, batch, calls));
}

/** Inside a transaction: marks as many of `calls` as the tenant's quota lets start now. Stale when the batch was taken over. */
export async function markWithinQuota(fx: Effects, batch: Marking, calls: readonly CallRow[]): Promise<readonly CallRow[]> {
  const { run, stepRef } = batch;
  const free =
    batch.callQuota === 0 ? calls.length : await fx.store.toolCallSlots.takeCallSlots(run.tenantId, batch.callQuota, calls.length);
  if (free === 0) return [];
  const chosen = calls.slice(0, free);
  const events = await fx.store.toolCalls.markCallsRunning(run, chosen, batch.owner, stepRef);
  if (!events) throw new StaleWorkError();
  fx.track(events);
  return chosen;
}

/**
 * Marks one call `running` once the tenant has a free slot, waiting (still `queued`) while its
 * other calls hold them all. Only a batch whose earlier calls started waits here: a batch whose
 * tenant was at its quota never started (its claim delays it), so the waiting batches of a
 * tenant are at most its quota.
 */
async function startWhenSlotFree(deps: StartCallDeps, attempt: BatchAttempt, call: CallRow): Promise<"started" | "stale" | "cancelled"> {
  for (;;) {
    const marked = await markRunning(deps, attempt, [call]);
    if (marked === null) return "stale";
    if (marked.length > 0) return "started";
    if (!(await sleepUnlessAborted(callSlotRetryMs(), attempt.signal))) return "cancelled";
  }
}

/** A busy tenant's jobs and calls look again after about a fifth of a second, spread so they do not all look at once. */
export function callSlotRetryMs(): number {
  return 150 + Math.floor(Math.random() * 100);
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
