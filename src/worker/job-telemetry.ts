import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { DelayedError, type Job } from "bullmq";
import type { Logger } from "../logger.js";
import type { Metrics } from "../observability/metrics.js";
import { activeTraceId, type Tracing } from "../observability/tracing.js";
import type { JobOutcome } from "./job-context.js";
import type { RunScope } from "./session-context-cache.js";
import type { RunId, TenantId } from "../ids.js";

export interface JobTelemetry {
  logger: Logger;
  metrics: Metrics;
  tracing: Tracing;
  workerId: string;
  /** The run's tenant and session, for the job's log line (cached per run by the worker). */
  scopeOf(runId: RunId): Promise<RunScope | undefined>;
}

/** What every job carries that telemetry reads: ids only (SPEC D1), and the trace it belongs to. */
interface ObservedJobData {
  runId: RunId;
  stepIndex: number;
  trace?: string;
}

/**
 * Wraps one step or tool-batch job (SPEC X8): its span continues the trace its job data names
 * (the API request, or the job before it), its log lines carry the run's ids and the trace id,
 * and its outcome is logged once and counted with its duration. A job that moves itself to
 * delayed (busy, or its tenant at a quota) is counted as `delayed` and logged at debug: it is
 * not an outcome, it comes back.
 */
export async function observeJob<Data extends ObservedJobData>(
  telemetry: JobTelemetry,
  queue: string,
  job: Job<Data>,
  work: () => Promise<JobOutcome>,
): Promise<JobOutcome> {
  const { metrics, tracing } = telemetry;
  const started = performance.now();
  // From the job's enqueue, less its first delay, to now; a job that delayed itself counts that wait too.
  metrics.jobWait.observe({ queue }, Math.max(0, Date.now() - job.timestamp - (job.opts.delay ?? 0)) / 1000);
  const parent = tracing.contextOf(job.data.trace);
  return tracing.tracer.startActiveSpan(
    `${queue} job`,
    { kind: SpanKind.CONSUMER, attributes: jobAttributes(job, telemetry.workerId) },
    parent,
    async (span) => {
      const log = telemetry.logger.child({
        jobId: job.id,
        queue,
        runId: job.data.runId,
        stepIndex: job.data.stepIndex,
        attempt: job.attemptsMade + 1,
        workerId: telemetry.workerId,
        ...traceField(),
      });
      let outcomeLabel = "error";
      try {
        const outcome = await work();
        outcomeLabel = outcome.kind;
        span.setAttribute("foya.job.outcome", outcome.kind);
        const scope = await telemetry.scopeOf(job.data.runId).catch(() => undefined);
        const ids = scope ? { tenantId: scope.tenantId, sessionId: scope.sessionId } : {};
        const seconds = (performance.now() - started) / 1000;
        const line = { ...ids, outcome: outcome.kind, ...detailOf(outcome), durationMs: Math.round(seconds * 1000) };
        if (outcome.kind === "failed") log.warn(line, "job ended its run failed");
        else if (outcome.kind === "stale" || outcome.kind === "busy") log.debug(line, "job superseded");
        else log.info(line, "job done");
        return outcome;
      } catch (error) {
        if (error instanceof DelayedError) {
          outcomeLabel = "delayed";
          log.debug("job delayed: it comes back later");
        } else {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
          const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
          log[last ? "error" : "warn"](
            { err: error, lastAttempt: last },
            last ? "job failed on its last attempt" : "job attempt failed; BullMQ retries it",
          );
        }
        throw error;
      } finally {
        metrics.jobDuration.observe({ queue, outcome: outcomeLabel }, (performance.now() - started) / 1000);
        span.end();
      }
    },
  );
}

function jobAttributes(job: Job<ObservedJobData>, workerId: string) {
  return {
    "foya.run_id": job.data.runId,
    "foya.step_index": job.data.stepIndex,
    "foya.job_id": job.id ?? "",
    "foya.attempt": job.attemptsMade + 1,
    "foya.worker_id": workerId,
  };
}

function traceField(): { traceId?: string } {
  const traceId = activeTraceId();
  return traceId ? { traceId } : {};
}

function detailOf(outcome: JobOutcome): Record<string, unknown> {
  switch (outcome.kind) {
    case "committed":
      return { detail: outcome.detail };
    case "gone":
      return { reason: outcome.reason };
    case "busy":
      return { retryInMs: outcome.retryInMs };
    case "failed":
      return { code: outcome.code };
    case "stale":
    case "cancelled":
      return {};
  }
}

/**
 * One tool call inside its batch job's span (SPEC X8): a span named after the tool, its
 * duration, and its outcome counted by tool and tenant (both bounded labels). A call that hands
 * its work to a sub-agent counts as `sub_agent`; its result arrives with the child's end.
 */
export function observeToolCall<T extends { isError?: boolean; awaitChildRun?: RunId }>(
  services: { metrics: Metrics; tracing: Tracing },
  call: { tenantId: TenantId; callId: string; name: string },
  work: () => Promise<T>,
): Promise<T> {
  const { metrics, tracing } = services;
  const started = performance.now();
  return tracing.inSpan(`tool ${call.name}`, { "foya.tool.name": call.name, "foya.tool.call_id": call.callId }, async (span) => {
    let outcome = "error";
    try {
      const result = await work();
      outcome = result.awaitChildRun !== undefined && !result.isError ? "sub_agent" : result.isError ? "failed" : "succeeded";
      span.setAttribute("foya.tool.outcome", outcome);
      return result;
    } finally {
      const tool = metrics.toolLabel(call.name);
      metrics.toolCalls.inc({ tool, outcome, tenant: metrics.tenantLabel(call.tenantId) });
      metrics.toolCallDuration.observe({ tool }, (performance.now() - started) / 1000);
    }
  });
}
