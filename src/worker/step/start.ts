import { dropAgentAtDepthLimit } from "../../agents/child-limits.js";
import type { StepRef } from "../../core/events.js";
import type { ApprovalPolicy } from "../../core/policy.js";
import { oversizedResults, projectionLimit } from "../../context/project-results.js";
import type { ScopedTools } from "../../mcp/tool-catalog.js";
import type { HistoryEntry } from "../../store/messages.js";
import type { ClaimedRun } from "../../store/runs.js";
import type { StepAttempt } from "../../store/steps.js";
import { withRetry } from "../../store/transact.js";
import { historyReadToolName } from "../../tools/builtin/history-read-tool.js";
import { keepToolOrder } from "../../tools/keep-tool-order.js";
import type { AnyTool } from "../../tools/tool.js";
import type { JobDeps } from "../job-deps.js";
import type { ProjectRow, SessionContextCache, SessionRow } from "../session-context-cache.js";
import type { ClaimedStep } from "./claim.js";
import type { HistoryCache } from "./history-cache.js";
import { createStepEventSink, type StepEventSink } from "./step-event-sink.js";

/** A claimed step, ready to call the model: what its later phases share. */
export interface PreparedStep {
  run: ClaimedRun;
  step: StepAttempt;
  stepRef: StepRef;
  session: SessionRow;
  project: ProjectRow;
  history: HistoryEntry[];
  /** Results longer than this are projected for this model (O3). */
  resultLimit: number;
  /** In the run's order (PR4): name-sorted at its first step, tools that joined later at the end. */
  exposed: readonly AnyTool[];
  tools: ScopedTools;
  /** The tenant's and project's approval policies as the claim read them (the commit pre-grants by them). */
  policies: readonly ApprovalPolicy[];
}

export interface StepStartContext {
  deps: Pick<JobDeps, "store" | "config" | "providers">;
  sessionContexts: SessionContextCache;
  histories: HistoryCache;
}

/**
 * Phase 2 of the step job (process.ts), the start: the session (from the worker's cache), the
 * history and the tools the step offers. The step's start itself is written by the event
 * sink's first flush (`openStepEvents`), or by its commit.
 */
export async function prepareStep(context: StepStartContext, claim: ClaimedStep, tools: ScopedTools): Promise<PreparedStep> {
  const { deps } = context;
  const { config } = deps;
  const { run, extra } = claim;
  const { session, project } = await context.sessionContexts.get(run.sessionId);
  // History is read here so the step's tool snapshot can say whether a projected result needs history_read_tool_result (O3).
  const history = await context.histories.extend(
    deps.store.messages,
    run,
    { after: claim.historyAfter, epoch: extra.historyEpoch },
    extra.history,
  );
  const resultLimit = projectionLimit(
    deps.providers.capabilities(session.providerProfile).contextWindow,
    config.runs.contextResultMaxChars,
  );
  const projected = oversizedResults(history, resultLimit);
  const exposed = keepToolOrder(
    dropAgentAtDepthLimit(
      tools.registry.exposedFor(session, run.activatedTools, projected.length > 0 ? [historyReadToolName] : []),
      session,
      config.runs.agentMaxDepth,
    ),
    extra.previousTools,
  );
  const step: StepAttempt = { index: claim.stepIndex, attempt: extra.attempt, tools: exposed.map((tool) => tool.name) };
  const stepRef = { index: step.index, attempt: step.attempt };
  return { run, step, stepRef, session, project, history, resultLimit, exposed, tools, policies: extra.policies };
}

/**
 * The step's live events (section 5): its first write is the step's start (`startStep`, with
 * `step_start` and the first events), every later one an append, each fenced.
 */
export function openStepEvents(deps: Pick<JobDeps, "store" | "bus">, prepared: PreparedStep, signal: AbortSignal): StepEventSink {
  const { run, step, stepRef } = prepared;
  const { steps } = deps.store;
  return createStepEventSink({
    bus: deps.bus,
    coalesceMs: 20,
    signal,
    start: {
      body: { type: "step_start", stepIndex: step.index, attempt: step.attempt, tools: step.tools },
      write: (bodies) => withRetry(() => steps.startStep(run, step, bodies)),
    },
    append: (bodies) => withRetry(() => steps.appendStepEvents(run, stepRef, bodies)),
  });
}
