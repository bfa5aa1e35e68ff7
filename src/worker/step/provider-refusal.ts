import type { Job } from "bullmq";
import { isFoyaError, type ProviderBackoff } from "../../errors.js";
import type { StepJobData } from "../../queue/job-types.js";
import type { JobDeps } from "../job-deps.js";
import type { ProviderWait } from "./admit.js";

/** A 429 that names no wait still pauses its profile this long: every worker's next request would meet the same limit. */
const unnamedThrottlePauseMs = 1000;

export interface Refusal {
  job: Pick<Job<StepJobData>, "attemptsMade" | "opts" | "data">;
  signal: AbortSignal;
  /** The profile that failed, and whether the chain holds another after it. */
  profile: string;
  hasFallback: boolean;
  /** Whether any of the attempt's output had gone to the sink. */
  output: boolean;
}

/** What the step does after its provider failed: the next profile, a wait (the pause), or the usual retry (fail.ts). */
export type RefusalOutcome = { kind: "fallback" } | { kind: "wait"; wait: ProviderWait } | { kind: "throw" };

/**
 * A provider's failure during a step (PR3). An answer refusing for load with a wait pauses the
 * profile for every worker. Before any output of the attempt reached a client, the step moves to
 * the next profile of its chain when this one is now paused or failed on the step's last attempt;
 * without one, it waits out the pause (not a failed attempt) for at most the profile's
 * `throttleWaitMs` in all. Anything else is thrown: retried as a new attempt with jittered
 * backoff (X1), or the run fails.
 */
export async function afterRefusal(
  deps: Pick<JobDeps, "config" | "metrics" | "providerBudgets">,
  refusal: Refusal,
  error: unknown,
): Promise<RefusalOutcome> {
  if (refusal.signal.aborted || !isFoyaError(error) || error.code !== "provider_error") return { kind: "throw" };
  const pausedMs = await pauseIfAsked(deps, refusal.profile, error.backoff);
  if (refusal.output) return { kind: "throw" };
  const { job } = refusal;
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  if (refusal.hasFallback && (pausedMs > 0 || lastAttempt)) return { kind: "fallback" };
  if (pausedMs > 0 && throttledFor(job) < throttleWaitMsOf(deps, refusal.profile))
    return { kind: "wait", wait: { kind: "wait", ms: pausedMs, reason: "throttled", profile: refusal.profile } };
  return { kind: "throw" };
}

async function pauseIfAsked(
  deps: Pick<JobDeps, "metrics" | "providerBudgets">,
  profile: string,
  backoff: ProviderBackoff | undefined,
): Promise<number> {
  if (backoff?.kind !== "throttled" && backoff?.kind !== "overloaded") return 0;
  const ms = backoff.retryAfterMs ?? (backoff.kind === "throttled" ? unnamedThrottlePauseMs : 0);
  deps.metrics.providerThrottled.inc({ profile, kind: backoff.kind, paused: ms > 0 ? "true" : "false" });
  if (ms > 0) await deps.providerBudgets.pause(profile, ms);
  return ms;
}

function throttledFor(job: Pick<Job<StepJobData>, "data">): number {
  return job.data.throttledSince === undefined ? 0 : Date.now() - job.data.throttledSince;
}

function throttleWaitMsOf(deps: Pick<JobDeps, "config">, profile: string): number {
  return deps.config.providers.profiles.find((candidate) => candidate.name === profile)?.throttleWaitMs ?? 0;
}
