import { StaleWorkError } from "../../store/transact.js";
import type { JobOutcome } from "../job-context.js";
import type { JobDeps } from "../job-deps.js";
import type { ProviderWait } from "./admit.js";
import type { FailedAttempt } from "./fail.js";

/**
 * A step that waits for its provider (PR3) without holding a worker: what its attempt buffered
 * is written, the run's lease is given back (fenced; the run keeps its job), the first wait of
 * the step tells the client `run_status: waiting_for_provider` with the expected wait, and the
 * job answers `busy`, so process.ts puts it back delayed until then (hold-run.ts `delayJob`),
 * a little jittered so the steps a pause stopped do not all come back at the same millisecond.
 */
export async function waitForProvider(
  deps: Pick<JobDeps, "unitOfWork" | "metrics">,
  attempt: FailedAttempt,
  wait: ProviderWait,
): Promise<JobOutcome> {
  await attempt.sink?.settle();
  const { job } = attempt;
  const { run } = attempt.prepared;
  const announce = job.data.waitingSince === undefined;
  const released = await deps.unitOfWork.transactFenced(async (fx) => {
    if (!(await fx.store.runs.releaseLease(run))) throw new StaleWorkError();
    if (announce) {
      const body = { type: "run_status", status: "waiting_for_provider", reason: waitReason(wait), waitMs: Math.ceil(wait.ms) } as const;
      await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: null, body }]);
    }
    return true;
  });
  if (!released) return { kind: "stale" };
  deps.metrics.providerWaits.inc({ profile: wait.profile, reason: wait.reason });
  const now = Date.now();
  const throttledSince = wait.reason === "throttled" ? (job.data.throttledSince ?? now) : job.data.throttledSince;
  if (announce || throttledSince !== job.data.throttledSince)
    await job.updateData({ ...job.data, waitingSince: job.data.waitingSince ?? now, ...(throttledSince ? { throttledSince } : {}) });
  return { kind: "busy", retryInMs: Math.max(10, Math.ceil(wait.ms + Math.random() * Math.min(250, wait.ms / 10))) };
}

/** The reason the client reads. */
function waitReason(wait: ProviderWait): string {
  const profile = `provider profile "${wait.profile}"`;
  switch (wait.reason) {
    case "paused":
      return `${profile} is paused: it answered that it is over its limits or overloaded`;
    case "throttled":
      return `${profile} answered that it is over its limits or overloaded, and asked to wait`;
    case "fair_share":
      return `the tenant has its fair share of ${profile}'s budget while other tenants wait`;
    case "concurrency":
      return `${profile} has as many requests in flight as its budget allows`;
    case "requests":
    case "input_tokens":
    case "output_tokens":
      return `${profile} has used its ${wait.reason.replace("_", " ")} budget for the current window`;
    default: {
      const unreachable: never = wait.reason;
      return unreachable;
    }
  }
}
