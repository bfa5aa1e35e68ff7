import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { boundedLabel, type BoundedLabel } from "./bounded-label.js";

/**
 * What a process measures (SPEC X8), in a registry of its own: two services in one process (the
 * tests) never mix their numbers, and nothing here is a global. Names follow Prometheus
 * conventions (`_seconds`, `_total`); docs/operations.md says what each means and what to alert on.
 *
 * Instruments here are the ones code records as things happen. Gauges of shared state (queue
 * depth and age, approvals waiting, live workers) are read from Redis and Postgres when scraped:
 * `registerStateGauges` in state-gauges.ts.
 */
export interface Metrics {
  readonly registry: Registry;
  /** Step and tool-batch jobs by queue and outcome (a `JobOutcome` kind, `delayed`, or `error`). */
  readonly jobDuration: Histogram<"queue" | "outcome">;
  /** From the job's enqueue (or its delay's end) to a worker taking it. */
  readonly jobWait: Histogram<"queue">;
  readonly modelRequestDuration: Histogram<"profile" | "outcome">;
  readonly modelTokens: Counter<"profile" | "kind" | "tenant">;
  /** Input tokens the provider read from (`read`) or wrote to (`write`) its prompt cache; part of the `input` tokens above. */
  readonly modelCacheTokens: Counter<"profile" | "kind" | "tenant">;
  /** Steps that waited for a provider profile (SPEC PR3), by why: paused, a limit, or the tenant's fair share. */
  readonly providerWaits: Counter<"profile" | "reason">;
  /** Provider answers refusing for load (429: throttled, 529 or 503 overloaded), by whether they paused the profile. */
  readonly providerThrottled: Counter<"profile" | "kind" | "paused">;
  /** Steps a fallback profile answered for their own (paused or failing) profile. */
  readonly providerFallbacks: Counter<"from" | "to">;
  readonly toolCalls: Counter<"tool" | "outcome" | "tenant">;
  readonly toolCallDuration: Histogram<"tool">;
  /** From the approval's request to a person's (or the expiry's) decision. */
  readonly approvalDecisionSeconds: Histogram<"decision">;
  readonly webhookDeliveries: Counter<"outcome">;
  readonly sseClients: Gauge;
  /** From asking the sandbox for a process to the process running (bwrap, namespaces, limits). */
  readonly sandboxStartSeconds: Histogram;
  readonly sweeperActions: Counter<"action">;
  readonly runsEnded: Counter<"status" | "tenant">;
  readonly apiRequests: Counter<"method" | "route" | "status">;
  readonly apiRequestDuration: Histogram<"method" | "route">;
  /** Tenant ids as labels, bounded (the first `tenantLabels` tenants seen, then `other`). */
  readonly tenantLabel: BoundedLabel;
  /** Tool names as labels, bounded the same way: MCP servers bring names of their own. */
  readonly toolLabel: BoundedLabel;
}

export interface MetricsOptions {
  /** Distinct tenants that get a series of their own. */
  tenantLabels: number;
  /** Labels every series of this process carries, e.g. its role. */
  defaultLabels?: Record<string, string>;
}

/** Seconds: jobs and tool calls range from milliseconds to the tool wall-time limit. */
const durationBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Seconds: a person's decision takes from seconds to the approval's expiry (days). */
const decisionBuckets = [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600];

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  // Process CPU, memory, event-loop lag and handles, as every Node service exposes them.
  collectDefaultMetrics({ register: registry, prefix: "foya_" });
  const registers = [registry];
  return {
    registry,
    jobDuration: new Histogram({
      name: "foya_job_duration_seconds",
      help: "Step and tool-batch jobs, from a worker taking one to its outcome.",
      labelNames: ["queue", "outcome"],
      buckets: durationBuckets,
      registers,
    }),
    jobWait: new Histogram({
      name: "foya_job_wait_seconds",
      help: "Time a job waited in its queue before a worker took it.",
      labelNames: ["queue"],
      buckets: durationBuckets,
      registers,
    }),
    modelRequestDuration: new Histogram({
      name: "foya_model_request_duration_seconds",
      help: "Model requests of steps, from sending to the last streamed part, by provider profile and outcome.",
      labelNames: ["profile", "outcome"],
      buckets: durationBuckets,
      registers,
    }),
    modelTokens: new Counter({
      name: "foya_model_tokens_total",
      help: "Model tokens the providers reported, by profile, kind (input, output) and tenant.",
      labelNames: ["profile", "kind", "tenant"],
      registers,
    }),
    modelCacheTokens: new Counter({
      name: "foya_model_cache_tokens_total",
      help: "Input tokens the providers reported as read from (kind read) or written to (kind write) their prompt cache, by profile and tenant.",
      labelNames: ["profile", "kind", "tenant"],
      registers,
    }),
    providerWaits: new Counter({
      name: "foya_provider_waits_total",
      help: "Model steps that waited for their provider profile, holding no worker, by profile and reason (paused, requests, input_tokens, output_tokens, concurrency, fair_share, throttled).",
      labelNames: ["profile", "reason"],
      registers,
    }),
    providerThrottled: new Counter({
      name: "foya_provider_throttled_total",
      help: "Provider answers refusing for load, by profile, kind (throttled: 429; overloaded: 529 or 503) and whether they paused the profile (they named a wait).",
      labelNames: ["profile", "kind", "paused"],
      registers,
    }),
    providerFallbacks: new Counter({
      name: "foya_provider_fallbacks_total",
      help: "Model steps a fallback profile answered, by the profile they were for and the one that answered.",
      labelNames: ["from", "to"],
      registers,
    }),
    toolCalls: new Counter({
      name: "foya_tool_calls_total",
      help: "Tool calls that ran, by tool, outcome (succeeded, failed, sub_agent: handed to a child run, error: the tool threw) and tenant.",
      labelNames: ["tool", "outcome", "tenant"],
      registers,
    }),
    toolCallDuration: new Histogram({
      name: "foya_tool_call_duration_seconds",
      help: "Tool calls, from start to result.",
      labelNames: ["tool"],
      buckets: durationBuckets,
      registers,
    }),
    approvalDecisionSeconds: new Histogram({
      name: "foya_approval_decision_seconds",
      help: "Approvals, from request to decision, by decision (approved, denied, expired).",
      labelNames: ["decision"],
      buckets: decisionBuckets,
      registers,
    }),
    webhookDeliveries: new Counter({
      name: "foya_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome: delivered, failed (retried, or the last attempt), not_pending, missing, abandoned.",
      labelNames: ["outcome"],
      registers,
    }),
    sseClients: new Gauge({ name: "foya_sse_clients", help: "Event streams open on this API process.", registers }),
    sandboxStartSeconds: new Histogram({
      name: "foya_sandbox_start_seconds",
      help: "Sandboxed tool processes, from asking for one to it running.",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    sweeperActions: new Counter({
      name: "foya_sweeper_actions_total",
      help: "What the sweepers did to stuck work, by action.",
      labelNames: ["action"],
      registers,
    }),
    runsEnded: new Counter({
      name: "foya_runs_ended_total",
      help: "Runs that reached a terminal status, by status and tenant.",
      labelNames: ["status", "tenant"],
      registers,
    }),
    apiRequests: new Counter({
      name: "foya_api_requests_total",
      help: "API requests by method, route pattern and status.",
      labelNames: ["method", "route", "status"],
      registers,
    }),
    apiRequestDuration: new Histogram({
      name: "foya_api_request_duration_seconds",
      help: "API requests, from arrival to the response's head (a stream's whole life is not counted).",
      labelNames: ["method", "route"],
      buckets: durationBuckets,
      registers,
    }),
    tenantLabel: boundedLabel(options.tenantLabels),
    toolLabel: boundedLabel(200),
  };
}
