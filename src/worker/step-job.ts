import { DelayedError, type Job } from "bullmq";
import type { AssistantToolCall } from "../core/history.js";
import { isFoyaError } from "../errors.js";
import { isConnectionError } from "../startup/dependency-wait.js";
import type { FinishReason, Usage } from "../providers/provider.js";
import type { StepJobData } from "../queue/job-types.js";
import { compileMessages } from "../context/compile-request.js";
import { oversizedResults, projectionLimit } from "../context/project-results.js";
import { historyReadToolName } from "../tools/builtin/history-read-tool.js";
import { artifactReader } from "../store/artifacts.js";
import { endRun } from "../runs/run-lifecycle.js";
import { usageRefusal, type QuotaRefusal } from "../runs/quota-refusal.js";
import { effectiveQuotas } from "../tenants/tenant-settings.js";
import { StaleWorkError, transactFenced, withRetry } from "../store/transact.js";
import { claimStep, historyOrigin, releaseForRetry, type ClaimedRun, type StepClaim } from "../store/runs.js";
import type { MessagePosition } from "../core/history.js";
import { appendStepEvents, commitStep, endStepAttempt, startStep, type StepAttempt } from "../store/steps.js";
import { succeededCallNamed } from "../store/tool-calls.js";
import { storableText } from "../core/storable-text.js";
import type { JobContext, JobOutcome } from "./job-context.js";
import type { EventBody, StepRef } from "../core/events.js";
import type { Services } from "../services.js";
import { toolSearchName } from "../tools/tool-registry.js";
import { createStepEventSink, type StepEventSink } from "./step-event-sink.js";
import { toolsOfRun } from "./run-tools.js";
import { dropAgentAtDepthLimit } from "../agents/child-limits.js";
import { preGrantFirstGroup } from "./pre-grant.js";
import type { ScopedTools } from "../mcp/tool-catalog.js";

/**
 * One model Step (SPEC D1): claim the run, stream the model's response as
 * events, then commit the assistant message, its tool calls and the next job
 * in one fenced transaction. A redelivered step streams again under a new
 * attempt number; only one attempt can commit (D4, X1).
 */
export async function processStepJob(context: JobContext, job: Job<StepJobData>, token: string | undefined): Promise<JobOutcome> {
  const { services, leases, aborts } = context;
  const { config } = services;
  // Dies holding the job in BullMQ before the run is claimed: no lease names this worker (D9).
  services.failpoints.hit("worker.step_job_taken");
  const { runId, stepIndex } = job.data;
  const owner = `${context.workerId}/${job.id}`;
  const tools = await toolsOfRun(context, runId);

  // The claim (with the new history) and the step's start (with its first events or its
  // commit) are separate fenced statements, not one transaction: a crash between them leaves a
  // claimed run whose next attempt claims it again (D4). The run's scope is cached by toolsOfRun.
  const { pool } = services.db;
  const scope = await context.sessionContexts.scopeOfRun(services.db.db, runId);
  const historyAfter = scope ? context.histories.after(scope) : historyOrigin;
  const claim = await withRetry(() =>
    claimStep(pool, { runId, stepIndex, next: { kind: "step", stepIndex }, owner, leaseMs: config.workers.leaseMs, historyAfter }),
  );
  if (claim.kind === "busy") {
    await job.moveToDelayed(Date.now() + claim.retryInMs, token);
    throw new DelayedError();
  }
  if (claim.kind === "gone") return claim;
  const { run } = claim;
  leases.hold(owner);
  const overBudget = await budgetRefusal(services, run).catch((error: unknown) => {
    leases.release(owner);
    throw error;
  });
  if (overBudget) {
    try {
      return await endOverBudget(services, run, overBudget);
    } finally {
      leases.release(owner);
    }
  }
  const prepared = await prepareStep(context, run, stepIndex, claim.extra, historyAfter, tools).catch((error: unknown) => {
    leases.release(owner);
    throw error;
  });
  const { session, project, history, resultLimit, exposed, step } = prepared;
  const stepRef: StepRef = { index: step.index, attempt: step.attempt };

  const controller = aborts.register(runId);
  let sink: StepEventSink | undefined;
  try {
    const provider = services.providers.get(session.providerProfile);
    const capabilities = services.providers.capabilities(session.providerProfile);
    sink = createStepEventSink({
      bus: services.bus,
      coalesceMs: 20,
      signal: controller.signal,
      start: {
        body: { type: "step_start", stepIndex, attempt: step.attempt, tools: step.tools },
        write: (bodies) => withRetry(() => startStep(pool, run, step, bodies)),
      },
      append: (bodies) => withRetry(() => appendStepEvents(pool, run, stepRef, bodies)),
    });
    let text = "";
    const calls = new Map<number, AssistantToolCall>();
    let finish: { reason: FinishReason; stopReason?: string; usage?: Usage } | undefined;
    const request = {
      model: session.model ?? provider.defaultModel,
      messages: await compileMessages(history, {
        imageInput: capabilities.imageInput,
        artifacts: artifactReader(services.db.db, { tenantId: run.tenantId, sessionId: run.sessionId }),
        resultLimit,
      }),
      tools: tools.registry.schemasFor(exposed),
      parallelToolCalls: capabilities.parallelToolCalls,
      ...(session.systemPrompt ? { system: session.systemPrompt } : {}),
    };
    // The model request (SPEC X8): a span of its own, its latency and the tokens it reported.
    const stepSink = sink;
    const modelStarted = performance.now();
    let modelOutcome = "error";
    await services.tracing.inSpan(
      "model request",
      { "foya.provider_profile": provider.profile, "gen_ai.request.model": request.model },
      async (span) => {
        try {
          for await (const part of provider.stream(request, controller.signal)) {
            switch (part.type) {
              // Whole strings are made storable once complete, so a pair split across deltas survives.
              case "text-delta":
                text += part.text;
                stepSink.push({ type: "text_delta", text: storableText(part.text) });
                break;
              case "tool-call-start": {
                const call = { callId: storableText(part.id), name: storableText(part.name), argumentsRaw: "" };
                calls.set(part.index, call);
                stepSink.push(
                  { type: "tool_begin", callId: call.callId, name: call.name, callIndex: part.index, status: "queued" },
                  { urgent: true },
                );
                break;
              }
              case "tool-call-delta": {
                const call = calls.get(part.index);
                if (!call) throw new Error(`provider sent arguments for unknown call index ${part.index}`);
                call.argumentsRaw += part.argumentsDelta;
                stepSink.push({ type: "tool_update", callId: call.callId, argumentsDelta: storableText(part.argumentsDelta) });
                break;
              }
              case "finish":
                finish = {
                  reason: part.reason,
                  ...(part.stopReason !== undefined ? { stopReason: storableText(part.stopReason) } : {}),
                  ...(part.usage ? { usage: part.usage } : {}),
                };
                break;
              default: {
                const unreachable: never = part;
                throw new Error(`unknown stream part ${JSON.stringify(unreachable)}`);
              }
            }
          }
          modelOutcome = "ok";
          if (finish?.usage)
            span.setAttributes({
              "gen_ai.usage.input_tokens": finish.usage.inputTokens,
              "gen_ai.usage.output_tokens": finish.usage.outputTokens,
            });
        } finally {
          const profile = provider.profile;
          services.metrics.modelRequestDuration.observe(
            { profile, outcome: controller.signal.aborted ? "cancelled" : modelOutcome },
            (performance.now() - modelStarted) / 1000,
          );
          if (finish?.usage) {
            const tenant = services.metrics.tenantLabel(run.tenantId);
            services.metrics.modelTokens.inc({ profile, kind: "input", tenant }, finish.usage.inputTokens);
            services.metrics.modelTokens.inc({ profile, kind: "output", tenant }, finish.usage.outputTokens);
          }
        }
      },
    );
    const pendingEvents = await sink.takePending();
    const orderedCalls = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ ...call, argumentsRaw: storableText(call.argumentsRaw) }));
    text = storableText(text);

    const preGrants = await preGrantFirstGroup(
      { approvalMode: session.approvalMode, workspaceDir: project.workspacePath },
      claim.extra.policies,
      tools.executor,
      orderedCalls,
    );
    const result = { text, toolCalls: orderedCalls, finish, pendingEvents, preGrants };
    if (orderedCalls.length === 0 && text.trim() === "" && step.attempt === 1 && (await justActivatedTools(services, runId, stepIndex))) {
      return await askAgain(services, run, step, stepRef, pendingEvents);
    }
    let committed: boolean;
    if (orderedCalls.length > 0) {
      const events = await withRetry(() => commitStep(pool, run, step, result));
      committed = events !== null;
      if (events) {
        await Promise.all([
          services.bus.publish(events),
          services.dispatcher.dispatch([{ runId, tenantId: run.tenantId, next: { kind: "batch", stepIndex }, redispatches: 0 }]),
        ]);
      }
    } else {
      // The last step: the run ends with it, in the same transaction.
      committed =
        (await transactFenced(services, async (fx) => {
          const events = await commitStep(fx.pg, run, step, result);
          if (!events) throw new StaleWorkError();
          fx.track(events);
          if (!(await endRun(fx, run, "completed", { fence: run.fence }))) throw new StaleWorkError();
          return true;
        })) === true;
    }
    return committed ? { kind: "committed", detail: `${orderedCalls.length} tool calls` } : { kind: "stale" };
  } catch (error) {
    await sink?.settle();
    if (controller.signal.aborted) return { kind: "cancelled" };
    if (error instanceof StaleWorkError) return { kind: "stale" };
    const finalAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const permanent = isFoyaError(error) && error.code === "provider_config";
    // Postgres or Redis away is no fault of the step: never fail the run for it, even on the last
    // attempt. The job fails; the run still needs it, and the sweeper enqueues it again (X4).
    const dependencyAway = !isFoyaError(error) && isConnectionError(error);
    if ((!finalAttempt && !permanent) || dependencyAway) throw error;
    const code = isFoyaError(error) ? error.code : "step_failed";
    const message = describeFailure(error, runId);
    // The run's record tells tenants what happened; operators get the whole error, cause included.
    services.logger.warn({ err: error, runId, stepIndex, code }, "model step failed on its last attempt");
    await transactFenced(services, async (fx) => {
      await endStepAttempt(fx.tx, run, step, { status: "failed" });
      if (!(await endRun(fx, run, "failed", { fence: run.fence, error: { code, message } }))) throw new StaleWorkError();
    });
    return { kind: "failed", code };
  } finally {
    aborts.unregister(runId, controller);
    leases.release(owner);
  }
}

/**
 * The tenant's use quotas, checked at every step's claim (SPEC X5), sub-agents' steps included:
 * a run whose tenant used its tokensPerDay or keeps its storageBytes calls the model no more.
 * Only read when a quota is set; the tenant's settings come from the process's cache.
 */
async function budgetRefusal(services: Services, run: ClaimedRun): Promise<QuotaRefusal | undefined> {
  const quotas = effectiveQuotas(services.config, await services.tenantSettings.get(run.tenantId));
  if (quotas.tokensPerDay === 0 && quotas.storageBytes === 0) return undefined;
  return usageRefusal(services.db.db, run.tenantId, quotas);
}

/** Ends a run whose tenant is over a use quota before its step starts: `failed`, `quota_exceeded`, the quota named. */
async function endOverBudget(services: Services, run: ClaimedRun, refusal: QuotaRefusal): Promise<JobOutcome> {
  const ended = await transactFenced(services, async (fx) => {
    const error = { code: "quota_exceeded", message: `the run stopped before its next model step: ${refusal.message}` };
    if (!(await endRun(fx, run, "failed", { fence: run.fence, error }))) throw new StaleWorkError();
    return true;
  });
  return ended ? { kind: "failed", code: "quota_exceeded" } : { kind: "stale" };
}

/**
 * What a claimed step needs before it calls the model: the session, the history and the
 * tools it offers. Its start is written by the event sink's first flush, or by its commit.
 */
async function prepareStep(
  context: JobContext,
  run: ClaimedRun,
  stepIndex: number,
  claimed: StepClaim,
  historyAfter: MessagePosition,
  tools: ScopedTools,
) {
  const { services } = context;
  const { config } = services;
  const { pool } = services.db;
  const { session, project } = await context.sessionContexts.get(services.db.db, run.sessionId);
  // History is read here so the step's tool snapshot can say whether a projected result needs history_read_tool_result (O3).
  const history = await context.histories.extend(pool, run, historyAfter, claimed.history);
  const resultLimit = projectionLimit(
    services.providers.capabilities(session.providerProfile).contextWindow,
    config.runs.contextResultMaxChars,
  );
  const projected = oversizedResults(history, resultLimit);
  const exposed = dropAgentAtDepthLimit(
    tools.registry.exposedFor(session, run.activatedTools, projected.length > 0 ? [historyReadToolName] : []),
    session,
    config.runs.agentMaxDepth,
  );
  const step: StepAttempt = { index: stepIndex, attempt: claimed.attempt, tools: exposed.map((tool) => tool.name) };
  return { session, project, history, resultLimit, exposed, step };
}

/**
 * The reason a tenant sees on the failed run. A `FoyaError`'s message is
 * written for tenants (provider failures are redacted where they are made,
 * S10); anything else may carry internals (a driver's message, SQL, a
 * connection string), so it is named only by the run, and logged whole.
 */
function describeFailure(error: unknown, runId: string): string {
  if (isFoyaError(error)) return storableText(error.message).slice(0, 2000);
  return `the model step failed on an internal error; the operator can find it in the log under run ${runId}`;
}

/** Whether the previous step's batch activated deferred tools through tool_search (R5). */
async function justActivatedTools(services: Services, runId: string, stepIndex: number): Promise<boolean> {
  return stepIndex > 0 && succeededCallNamed(services.db.db, runId, stepIndex - 1, toolSearchName);
}

/**
 * A step that answered nothing right after tool_search activated tools is run
 * once more instead of ending the turn empty (R5): nothing of this attempt is
 * committed, and the same step is dispatched again under a new job id; the
 * next attempt commits whatever it answers.
 */
async function askAgain(
  services: Services,
  run: ClaimedRun,
  step: StepAttempt,
  stepRef: StepRef,
  pendingEvents: EventBody[],
): Promise<JobOutcome> {
  const released = await transactFenced(services, async (fx) => {
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
