import type { MessagePosition } from "../../core/history.js";
import type { StepJobData } from "../../queue/job-types.js";
import { historyOrigin, type ClaimedRun, type StepClaim } from "../../store/runs.js";
import { withRetry } from "../../store/transact.js";
import type { JobDeps } from "../job-deps.js";
import type { SessionContextCache } from "../session-context-cache.js";
import type { HistoryCache } from "./history-cache.js";

/** What the claim uses. */
export interface StepClaimContext {
  deps: Pick<JobDeps, "store" | "config">;
  sessionContexts: SessionContextCache;
  histories: HistoryCache;
}

export interface ClaimedStep {
  kind: "claimed";
  run: ClaimedRun;
  stepIndex: number;
  extra: StepClaim;
  /** The history position this worker already held: the claim read what comes after it. */
  historyAfter: MessagePosition;
}

/**
 * Phase 1 of the step job (process.ts), the claim: one statement claims `{ step, stepIndex }` and
 * reads the step's last attempt and the history this worker does not have yet (history-cache.ts).
 * It commits on its own: the step's start is a later fenced statement, and a crash between the
 * two leaves a claimed run whose next attempt claims it again (D4). The run's scope is cached
 * by `toolsOfRun`.
 */
export async function claimStepJob(
  context: StepClaimContext,
  data: StepJobData,
  owner: string,
): Promise<ClaimedStep | { kind: "busy"; retryInMs: number } | { kind: "gone"; reason: string }> {
  const { deps } = context;
  const { runId, stepIndex } = data;
  const scope = await context.sessionContexts.scopeOfRun(runId);
  const historyAfter = scope ? context.histories.after(scope) : historyOrigin;
  const leaseMs = deps.config.workers.leaseMs;
  const claim = await withRetry(() =>
    deps.store.runs.claimStep({ runId, stepIndex, next: { kind: "step", stepIndex }, owner, leaseMs, historyAfter }),
  );
  return claim.kind === "claimed" ? { ...claim, stepIndex, historyAfter } : claim;
}
