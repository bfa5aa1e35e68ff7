import type { Queue } from "bullmq";
import { Gauge, type Registry } from "prom-client";
import type { Metrics } from "./metrics.js";

export interface StateSources {
  /** Queues by the label their gauges carry; the shards of one queue share a label and are summed. */
  queues: readonly { label: string; queue: Queue }[];
  /** Approvals waiting for a person's decision, across every tenant. */
  pendingApprovals(): Promise<number>;
  /** Worker processes whose liveness record is fresh (silent for less than the liveness timeout, SPEC D9). */
  liveWorkers(): Promise<number>;
  /** Deleted projects whose workspace and trash the workers have not removed yet (SPEC F4). */
  projectsWithFilesLeft(): Promise<number>;
  /** Each provider profile's shared budget (SPEC PR3): its limits (null: none), its use in the window, its pause. */
  providerBudgets(): Promise<readonly ProviderBudgetGauge[]>;
  onError(error: unknown): void;
}

/** What the gauges show of one profile's budget (src/providers/budget/provider-budgets.ts `ProfileBudgetState`). */
export interface ProviderBudgetGauge {
  profile: string;
  limits: BudgetDimensions | null;
  used: BudgetDimensions;
  pausedForMs: number;
}

type BudgetDimensions = { requests: number; inputTokens: number; outputTokens: number; concurrent: number };

const budgetKinds = [
  ["requests", "requests"],
  ["inputTokens", "input_tokens"],
  ["outputTokens", "output_tokens"],
  ["concurrent", "concurrent"],
] as const;

/** Job states a queue's depth is reported for: what waits, runs, or waits its turn later. */
const depthStates = ["waiting", "prioritized", "active", "delayed", "failed"] as const;

/**
 * Gauges of shared state, read when scraped (SPEC X8): every process sees the same queues and
 * database, so these belong on the API's `/metrics` (or any one process's), not summed across
 * processes. A read that fails leaves the gauge unset for that scrape and is logged, never
 * thrown into the scrape.
 */
export function registerStateGauges(metrics: Metrics, sources: StateSources): void {
  const registers = [metrics.registry];
  // prom-client calls `collect` with the gauge as `this`; it is handed on as an argument.
  const guarded = <Labels extends string>(read: (gauge: Gauge<Labels>) => Promise<void>) =>
    async function collect(this: Gauge<Labels>) {
      try {
        await read(this);
      } catch (error) {
        sources.onError(error);
      }
    };
  new Gauge({
    name: "foya_queue_jobs",
    help: "Jobs in each queue by state (waiting, prioritized, active, delayed, failed).",
    labelNames: ["queue", "state"],
    registers,
    collect: guarded<"queue" | "state">(async (gauge) => {
      const totals = new Map<string, Record<string, number>>();
      for (const { label, queue } of sources.queues) {
        const counts = await queue.getJobCounts(...depthStates);
        const total = totals.get(label) ?? {};
        for (const state of depthStates) total[state] = (total[state] ?? 0) + (counts[state] ?? 0);
        totals.set(label, total);
      }
      gauge.reset();
      for (const [label, total] of totals) for (const state of depthStates) gauge.set({ queue: label, state }, total[state] ?? 0);
    }),
  });
  new Gauge({
    name: "foya_queue_oldest_waiting_seconds",
    help: "Age of the oldest job waiting for a worker in each queue (0 when none waits; among the first 1000 by priority).",
    labelNames: ["queue"],
    registers,
    collect: guarded<"queue">(async (gauge) => {
      const oldestByLabel = new Map<string, number>();
      for (const { label, queue } of sources.queues) {
        // Waiting jobs are FIFO (asc: the oldest first). Prioritized ones (every Foya job has a priority) are
        // ordered by priority, so the oldest can be anywhere: the first 1,000 are looked at, which admission
        // (at most each tenant's activeRuns jobs queued) makes the whole set in all but huge deployments.
        const jobs = [...(await queue.getJobs(["waiting"], 0, 0, true)), ...(await queue.getJobs(["prioritized"], 0, 999, true))];
        const oldest = Math.min(
          oldestByLabel.get(label) ?? Number.POSITIVE_INFINITY,
          ...jobs.map((job) => job.timestamp + (job.opts.delay ?? 0)),
        );
        oldestByLabel.set(label, oldest);
      }
      for (const [label, oldest] of oldestByLabel)
        gauge.set({ queue: label }, Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0);
    }),
  });
  new Gauge({
    name: "foya_approvals_waiting",
    help: "Approvals waiting for a person's decision, across every tenant.",
    registers,
    collect: guarded(async (gauge) => {
      gauge.set(await sources.pendingApprovals());
    }),
  });
  new Gauge({
    name: "foya_deleted_projects_with_files",
    help: "Deleted projects whose workspace and trash the workers have not removed yet.",
    registers,
    collect: guarded(async (gauge) => {
      gauge.set(await sources.projectsWithFilesLeft());
    }),
  });
  registerProviderGauges(sources, registers, guarded);
  new Gauge({
    name: "foya_workers_live",
    help: "Worker processes whose liveness record is fresh.",
    registers,
    collect: guarded(async (gauge) => {
      gauge.set(await sources.liveWorkers());
    }),
  });
}

type Guard = <Labels extends string>(read: (gauge: Gauge<Labels>) => Promise<void>) => (this: Gauge<Labels>) => Promise<void>;

/** Provider budgets (SPEC PR3): the limits, what the window holds across every worker, and pauses. */
function registerProviderGauges(sources: StateSources, registers: Registry[], guarded: Guard): void {
  const read = () => sources.providerBudgets();
  const perKind = (name: string, help: string, pick: (budget: ProviderBudgetGauge) => BudgetDimensions | null) =>
    new Gauge({
      name,
      help,
      labelNames: ["profile", "kind"],
      registers,
      collect: guarded<"profile" | "kind">(async (gauge) => {
        gauge.reset();
        for (const budget of await read()) {
          const counts = pick(budget);
          if (counts) for (const [field, kind] of budgetKinds) gauge.set({ profile: budget.profile, kind }, counts[field]);
        }
      }),
    });
  perKind(
    "foya_provider_budget_limit",
    "Each provider profile's budget per window by kind (requests, input_tokens, output_tokens, concurrent); 0: no limit.",
    (budget) => budget.limits,
  );
  perKind(
    "foya_provider_budget_used",
    "What each provider profile's budget counts in its current window (concurrent: in flight now), across every worker.",
    (budget) => (budget.limits ? budget.used : null),
  );
  new Gauge({
    name: "foya_provider_paused_seconds",
    help: "Seconds each provider profile stays paused after a 429 or overload answer; 0 when it is not.",
    labelNames: ["profile"],
    registers,
    collect: guarded<"profile">(async (gauge) => {
      gauge.reset();
      for (const budget of await read()) gauge.set({ profile: budget.profile }, budget.pausedForMs / 1000);
    }),
  });
}
