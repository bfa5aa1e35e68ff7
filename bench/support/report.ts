import type { Calibration } from "./calibrate.js";
import type { CpuUsage } from "./cpu.js";
import type { Distribution } from "./stats.js";

/** The benchmark's results, as printed and as written to bench/results/latest.json. */

export type SegmentsSummary = Array<{ key: string; label: string; p50: number; mean: number; share: number }>;

/** A window's counts and CPU divided by the agent steps it committed (ms are per step). */
export interface PerStepCounts {
  pgStatements: number;
  pgTransactions: number;
  /** Summed send-to-answer time of the statements, per step. */
  pgRoundTripMs: number;
  poolCheckouts: number;
  /** Mean wait for a pg pool connection, per checkout. */
  poolWaitPerCheckoutMs: number;
  redisCommands: number;
  workerCpuMs: number;
  /** The benchmark process (in-process API, event observers). */
  benchProcessCpuMs: number;
  /** Server-wide, from /proc; undefined off Linux. */
  postgresCpuMs: number | undefined;
  redisCpuMs: number | undefined;
  /** Everything on the machine. */
  machineCpuMs: number | undefined;
  /** Statements per step by kind ("update runs", "begin", ...), most frequent first. */
  statements: Record<string, number>;
}

export interface ProcessSummary {
  eventLoopUtilization: number;
  workerCpuCores: number;
  poolWaitMaxMs: number;
}

export interface LatencyPhase {
  runs: number;
  failedRuns: number;
  steps: number;
  retriedSteps: number;
  wallMs: number;
  /** Agent step: step_start → next step_start (baseline: A start → next A start), ms. */
  interval: Distribution;
  /** p50 of the first / last steps of each run (Foya only). */
  headP50: number | undefined;
  tailP50: number | undefined;
  eventSegments: SegmentsSummary | undefined;
  jobSegments: SegmentsSummary;
  jobSegmentsMissing: number;
  perStep: PerStepCounts | undefined;
  process: ProcessSummary;
  cpu: CpuUsage | undefined;
}

export interface ThroughputPhase {
  workers: number;
  runs: number;
  failedRuns: number;
  steps: number;
  retriedSteps: number;
  wallMs: number;
  stepsPerSecond: number;
  interval: Distribution;
  perStep: PerStepCounts | undefined;
  process: ProcessSummary;
  cpu: CpuUsage | undefined;
}

export interface BenchReport {
  environment: Record<string, string | number>;
  calibration: Calibration;
  settings: Record<string, number>;
  aims: { p50RatioMax: number; stepsPerSecondMin: number };
  foya: { latency: LatencyPhase; throughput: ThroughputPhase[] };
  baseline: { latency: LatencyPhase; throughput: ThroughputPhase[] };
  comparison: {
    p50Ratio: number;
    p99Ratio: number;
    throughputRatio1Worker: number;
    throughputRatio2Workers: number;
    p50AimMet: boolean;
    throughputAimMet: boolean;
  };
  cleanup: { databaseDropped: boolean; redisKeysLeft: number };
}

const pad = (text: string, width: number) => text.padEnd(width);
const num = (value: number | undefined, digits = 2) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toLocaleString("en-US", { maximumFractionDigits: digits });
const pct = (share: number) => `${Math.round(share * 100)}%`;
const verdict = (met: boolean) => (met ? "MET" : "NOT MET");

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows
    .map(
      (row) =>
        `   ${row.map((cell, column) => (column === 0 ? pad(cell, widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join("   ")}`,
    )
    .join("\n");
}

export function printReport(report: BenchReport): void {
  const { foya, baseline, comparison, aims, environment: env, settings, calibration: cal } = report;
  const out: string[] = [];
  const line = (text = "") => out.push(text);

  line("");
  line("=== Foya orchestration benchmark ===");
  line(`${env.date}  commit ${env.commit}`);
  line(
    `node ${env.node}, ${env.cpus} CPUs (${env.cpuModel}), load avg at start ${env.loadAverage1mAtStart}; Postgres ${env.postgres}, Redis ${env.redis}`,
  );
  line(
    `scripted zero-latency model, no-op tool; worker concurrency ${settings.stepConcurrency} step + ${settings.toolConcurrency} tool; pg pool ${settings.pgPoolMax}/process`,
  );
  line(
    `raw round trips from the bench process: pg 'select 1' p50 ${num(cal.pgSelect1P50Ms, 3)} ms (p99 ${num(cal.pgSelect1P99Ms, 3)}, ${num(cal.pgClientCpuMs, 3)} ms client CPU); ` +
      `Redis PING p50 ${num(cal.redisPingP50Ms, 3)} ms (p99 ${num(cal.redisPingP99Ms, 3)}, ${num(cal.redisClientCpuMs, 3)} ms client CPU)`,
  );

  line("");
  line(`1. Per agent step, one run at a time (${foya.latency.runs} runs × ${settings.latencySteps} steps; 1 worker process)`);
  line("   Foya: step_start → next step_start (model-step job + tool-batch job). Baseline: A start → next A start (A job + B job).");
  line(
    table([
      ["", "steps", "p50 ms", "p90 ms", "p99 ms", "mean ms"],
      [
        "Foya",
        String(foya.latency.steps),
        num(foya.latency.interval.p50),
        num(foya.latency.interval.p90),
        num(foya.latency.interval.p99),
        num(foya.latency.interval.mean),
      ],
      [
        "bare BullMQ chain",
        String(baseline.latency.steps),
        num(baseline.latency.interval.p50),
        num(baseline.latency.interval.p90),
        num(baseline.latency.interval.p99),
        num(baseline.latency.interval.mean),
      ],
      ["ratio Foya / bare", "", `${num(comparison.p50Ratio, 1)}×`, "", `${num(comparison.p99Ratio, 1)}×`, ""],
    ]),
  );
  line(`   aim: p50 ≤ ${aims.p50RatioMax}× the bare chain → ${verdict(comparison.p50AimMet)} (${num(comparison.p50Ratio, 1)}×)`);
  if (foya.latency.headP50 !== undefined) {
    line(
      `   Foya p50 of the first ${settings.headTail} steps of a run ${num(foya.latency.headP50)} ms, of the last ${settings.headTail} ${num(foya.latency.tailP50)} ms (history grows each step)`,
    );
  }

  line("");
  line(`2. Throughput: ${settings.concurrentRuns} concurrent runs (one session each) × ${settings.throughputSteps} agent steps`);
  const throughputRows: string[][] = [["", "workers", "steps", "wall s", "steps/s", "step p50 ms", "step p99 ms"]];
  for (const [name, phases] of [
    ["Foya", foya.throughput],
    ["bare BullMQ chain", baseline.throughput],
  ] as const) {
    for (const phase of phases) {
      throughputRows.push([
        name,
        String(phase.workers),
        String(phase.steps),
        num(phase.wallMs / 1000),
        num(phase.stepsPerSecond, 0),
        num(phase.interval.p50),
        num(phase.interval.p99),
      ]);
    }
  }
  line(table(throughputRows));
  line(
    `   ratio Foya / bare: ${num(comparison.throughputRatio1Worker, 3)} (1 worker), ${num(comparison.throughputRatio2Workers, 3)} (2 workers)`,
  );
  const best = Math.max(...foya.throughput.map((phase) => phase.stepsPerSecond));
  line(
    `   aim: ≥ ${aims.stepsPerSecondMin.toLocaleString("en-US")} agent steps/s with ${settings.concurrentRuns} runs → ${verdict(comparison.throughputAimMet)} (best ${num(best, 0)}/s)`,
  );
  const problems = [...foya.throughput, foya.latency].filter((phase) => phase.failedRuns > 0 || phase.retriedSteps > 0);
  if (problems.length > 0)
    line(
      `   WARNING: some runs failed or steps were redelivered: ${JSON.stringify(problems.map((p) => ({ failed: p.failedRuns, retried: p.retriedSteps })))}`,
    );

  line("");
  line("3. Where the time goes");
  const single = foya.latency.perStep;
  if (single) {
    line(
      `   Foya, per agent step (single run, worker side): ${num(single.pgStatements, 1)} Postgres statements in ${num(single.pgTransactions, 1)} transactions ` +
        `(${num(single.pgRoundTripMs)} ms summed send→answer), ${num(single.redisCommands, 1)} Redis commands, ${num(single.workerCpuMs)} ms worker CPU`,
    );
    const kinds = Object.entries(single.statements)
      .slice(0, 10)
      .map(([kind, count]) => `${kind} ${num(count, 1)}`)
      .join(", ");
    line(`     statements per step: ${kinds}`);
  }
  const baseSingle = baseline.latency.perStep;
  if (baseSingle)
    line(
      `   bare chain, per step (single chain): ${num(baseSingle.redisCommands, 1)} Redis commands, ${num(baseSingle.workerCpuMs)} ms worker CPU`,
    );
  if (foya.latency.eventSegments) {
    line("   Foya single run, by event arrival (p50 / mean / share of mean step):");
    for (const segment of foya.latency.eventSegments)
      line(
        `     ${pad(segment.label, 78)} ${num(segment.p50).padStart(6)} / ${num(segment.mean).padStart(6)} ms  ${pct(segment.share).padStart(4)}`,
      );
  }
  for (const [name, phase] of [
    ["Foya single run", foya.latency],
    ["bare chain, single", baseline.latency],
  ] as const) {
    line(`   ${name}, by BullMQ job timestamps (1 ms resolution; p50 / mean / share):`);
    for (const segment of phase.jobSegments)
      line(
        `     ${pad(segment.label, 78)} ${num(segment.p50).padStart(6)} / ${num(segment.mean).padStart(6)} ms  ${pct(segment.share).padStart(4)}`,
      );
    if (phase.jobSegmentsMissing > 0) line(`     (${phase.jobSegmentsMissing} steps without job timestamps)`);
  }
  line("   CPU per committed step, ms (machine = everything on the box; postgres/redis are server-wide):");
  const cpuRows: string[][] = [["", "machine", "worker(s)", "postgres", "redis", "bench proc", "pool wait/checkout", "worker loop busy"]];
  const cpuRow = (name: string, phase: LatencyPhase | ThroughputPhase) => {
    const per = phase.perStep;
    cpuRows.push([
      name,
      num(per?.machineCpuMs),
      num(per?.workerCpuMs),
      num(per?.postgresCpuMs),
      num(per?.redisCpuMs),
      num(per?.benchProcessCpuMs),
      name.startsWith("Foya") ? `${num(per?.poolWaitPerCheckoutMs)} ms` : "",
      pct(phase.process.eventLoopUtilization),
    ]);
  };
  cpuRow("Foya, single run", foya.latency);
  for (const phase of foya.throughput) cpuRow(`Foya, ${settings.concurrentRuns} runs, ${phase.workers} worker(s)`, phase);
  cpuRow("bare, single chain", baseline.latency);
  for (const phase of baseline.throughput) cpuRow(`bare, ${settings.concurrentRuns} chains, ${phase.workers} worker(s)`, phase);
  line(table(cpuRows));
  // If every CPU on the box did nothing but this, how many steps/s could it commit?
  const ceiling = (phases: readonly ThroughputPhase[]) => {
    const best = phases.map((phase) => phase.perStep?.machineCpuMs).filter((ms): ms is number => ms !== undefined && ms > 0);
    const cores = phases[0]?.cpu?.cores;
    return best.length > 0 && cores ? (cores * 1000) / Math.min(...best) : undefined;
  };
  const foyaCeiling = ceiling(foya.throughput);
  const bareCeiling = ceiling(baseline.throughput);
  if (foyaCeiling !== undefined && bareCeiling !== undefined) {
    line(
      `   CPU ceiling on this box (CPUs ÷ machine CPU per step, lowest measured): Foya ≈ ${num(foyaCeiling, 0)} steps/s, bare chain ≈ ${num(bareCeiling, 0)} steps/s`,
    );
  }
  line("");
  line(
    `cleanup: database dropped ${report.cleanup.databaseDropped ? "yes" : "NO"}, Redis keys left under the bench prefixes: ${report.cleanup.redisKeysLeft}`,
  );
  console.log(out.join("\n"));
}
