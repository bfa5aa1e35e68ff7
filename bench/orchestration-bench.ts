/**
 * Orchestration benchmark: what Foya's durable step machinery costs on top of
 * a bare BullMQ job chain, on the same Redis, with a zero-latency scripted
 * model and a no-op tool (so everything measured is orchestration).
 *
 *   npm run bench        (= tsx bench/orchestration-bench.ts)
 *
 * Phases, each bounded in work and time:
 *   1. Foya, one run at a time: per-agent-step latency (step_start → next step_start,
 *      timed on arrival of the session's Redis events), with Postgres/Redis counts.
 *   2. Foya, 64 concurrent runs on 1 worker process, then on 2: agent steps/s.
 *   3. Bare BullMQ chain (A adds B, B adds the next A; no Postgres), same shapes,
 *      same worker and job options, own queue prefix, own worker processes.
 * Then a report on stdout and in bench/results/latest.json.
 *
 * Setup: a fresh database foya_bench_<random> (admin DB from DATABASE_URL or the
 * local default), random queue prefixes, a temporary workspace; all removed at the end.
 *
 * Knobs (env, optional): BENCH_LATENCY_RUNS (6), BENCH_STEPS_PER_RUN (50),
 * BENCH_CONCURRENT_RUNS (64), BENCH_THROUGHPUT_STEPS (50), BENCH_CONCURRENCY (64),
 * BENCH_CPU_PROFILE_DIR (unset; when set, worker processes write V8 CPU profiles there on exit).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { execa } from "execa";
import { createApp } from "../src/api/app.js";
import { loadConfig } from "../src/config.js";
import { createServices, type Services } from "../src/services.js";
import { BaselineDriver, chainIntervals, type ChainRecord } from "./support/baseline-driver.js";
import { calibrate } from "./support/calibrate.js";
import { countRedisPrefix, createBenchEnv } from "./support/bench-env.js";
import { cpuBetween, cpuSnapshot, type CpuUsage } from "./support/cpu.js";
import { FoyaDriver, headAndTailIntervals, stepTimings, type RunRecord } from "./support/foya-driver.js";
import { cycleSegments, type ChainRef, type CycleSegments } from "./support/job-timings.js";
import { sumProbeStats, type ProbeStats } from "./support/probe-types.js";
import { startBaselineWorker, startFoyaWorker } from "./support/bench-workers.js";
import { benchRoot, printOutputTails, runBenchmark, type BenchProcess, cleanUpOnSignal } from "./support/processes.js";
import {
  printReport,
  type BenchReport,
  type LatencyPhase,
  type PerStepCounts,
  type ProcessSummary,
  type SegmentsSummary,
  type ThroughputPhase,
} from "./support/report.js";
import { envInt } from "./support/env-int.js";
import { sqlPool } from "./support/sql-pool.js";
import { defaultPoolSize } from "../src/db/client.js";
import { distribution, mean, ratio, round, roundDistribution } from "./support/stats.js";

const settings = {
  latencyRuns: envInt("BENCH_LATENCY_RUNS", 6, 50),
  latencySteps: envInt("BENCH_STEPS_PER_RUN", 50, 500),
  concurrentRuns: envInt("BENCH_CONCURRENT_RUNS", 64, 512),
  throughputSteps: envInt("BENCH_THROUGHPUT_STEPS", 50, 500),
  concurrency: envInt("BENCH_CONCURRENCY", 64, 1024),
  /** Warm-up work before each measured phase (JIT, connections, prepared pools). */
  warmupSteps: 5,
  /** No single wait (one run or one batch of runs) may take longer than this... */
  waitTimeoutMs: 180_000,
  /** ...and the whole benchmark gives up after this. */
  totalBudgetMs: 10 * 60_000,
  /** Steps at the start and end of a run compared to show cost growing with history. */
  headTail: 10,
};

const benchStartedAt = Date.now();

/** How long the next wait may take: the per-wait timeout, capped by what is left of the total budget. */
function timeLeft(): number {
  const remaining = benchStartedAt + settings.totalBudgetMs - Date.now();
  if (remaining <= 0) throw new Error(`the benchmark exceeded its ${settings.totalBudgetMs / 60_000} minute budget`);
  return Math.min(settings.waitTimeoutMs, remaining);
}

/** Aims the report checks against. */
const aims = { p50RatioMax: 4, stepsPerSecondMin: 1000 };

// ---------------------------------------------------------------------------

/** What one measured window produced, besides its own result. */
interface Measurement<T> {
  value: T;
  /** Worker-side counters, summed over the workers. */
  probe: ProbeStats;
  /** Machine and server CPU over the window. */
  cpu: CpuUsage | undefined;
  /** CPU used by this (API + observer) process over the window, ms. */
  benchCpuMs: number;
}

/** Runs `work` between a probe reset and a probe read on every worker, with CPU figures around it. */
async function measured<T>(workers: readonly BenchProcess[], work: () => Promise<T>): Promise<Measurement<T>> {
  await Promise.all(workers.map((worker) => worker.resetProbe()));
  const before = await cpuSnapshot();
  const benchCpu = process.cpuUsage();
  const value = await work();
  const benchUsed = process.cpuUsage(benchCpu);
  const after = await cpuSnapshot();
  const probe = sumProbeStats(await Promise.all(workers.map((worker) => worker.readProbe())));
  return { value, probe, cpu: cpuBetween(before, after), benchCpuMs: (benchUsed.user + benchUsed.system) / 1000 };
}

function summarizeSegments(segments: Record<string, number[]>, labels: Record<string, string>): SegmentsSummary {
  const means = Object.fromEntries(Object.entries(segments).map(([key, values]) => [key, mean(values)]));
  const total = Object.values(means).reduce((sum, value) => sum + value, 0);
  return Object.entries(segments).map(([key, values]) => {
    const d = distribution(values);
    return { key, label: labels[key] ?? key, p50: round(d.p50), mean: round(d.mean), share: round(ratio(means[key] ?? 0, total)) };
  });
}

const jobSegmentLabels = (first: string, second: string): Record<string, string> => ({
  firstInJob: `${first} job: start → ${second} job enqueued`,
  secondWait: `queue hop: ${second} job enqueued → started`,
  secondInJob: `${second} job: start → next ${first} job enqueued`,
  firstWait: `queue hop: ${first} job enqueued → started`,
});

function jobSegmentsSummary(segments: CycleSegments, first: string, second: string): SegmentsSummary {
  const { missing: _missing, ...values } = segments;
  return summarizeSegments(values, jobSegmentLabels(first, second));
}

/** Counts and CPU of a window, divided by the steps it committed. */
function perStep(m: Measurement<unknown>, steps: number): PerStepCounts {
  const { probe, cpu } = m;
  const cpuMs = (cores: number | undefined) => (cpu && cores !== undefined ? round((cores * cpu.seconds * 1000) / steps) : undefined);
  return {
    pgStatements: round(probe.queries / steps),
    pgTransactions: round(probe.transactions / steps),
    pgRoundTripMs: round(probe.queryMs / steps),
    poolCheckouts: round(probe.poolCheckouts / steps),
    poolWaitPerCheckoutMs: round(probe.poolCheckouts > 0 ? probe.poolWaitMs / probe.poolCheckouts : 0),
    redisCommands: round(probe.redisCommands / steps),
    workerCpuMs: round((probe.cpuUserMs + probe.cpuSystemMs) / steps),
    benchProcessCpuMs: round(m.benchCpuMs / steps),
    postgresCpuMs: cpuMs(cpu?.serverCores.postgres),
    redisCpuMs: cpuMs(cpu?.serverCores["redis-server"]),
    machineCpuMs: cpuMs(cpu ? cpu.machineBusy * cpu.cores : undefined),
    statements: Object.fromEntries(
      Object.entries(probe.statements)
        .sort(([, a], [, b]) => b - a)
        .map(([kind, count]) => [kind, round(count / steps)]),
    ),
  };
}

function probeSummary(probe: ProbeStats): ProcessSummary {
  return {
    eventLoopUtilization: round(probe.eventLoopUtilization),
    workerCpuCores: round((probe.cpuUserMs + probe.cpuSystemMs) / probe.wallMs),
    poolWaitMaxMs: round(probe.poolWaitMaxMs),
  };
}

// ---------------------------------------------------------------------------

async function foyaLatencyPhase(driver: FoyaDriver, services: Services, worker: BenchProcess): Promise<LatencyPhase> {
  const sessions = await driver.createSessions(settings.latencyRuns + 1);
  const [, ...measuredSessions] = sessions;
  await driver.runAll(sessions.slice(0, 1), settings.warmupSteps, timeLeft());

  const started = performance.now();
  const m = await measured([worker], async () => {
    const all: RunRecord[] = [];
    // One run at a time: nothing else competes for the worker.
    for (const session of measuredSessions) all.push(...(await driver.runAll([session], settings.latencySteps, timeLeft())));
    return all;
  });
  const wallMs = performance.now() - started;
  const records = m.value;
  const failed = records.filter((record) => record.endStatus !== "completed").length;
  const timings = stepTimings(records);
  const steps = timings.interval.length;
  const { head, tail } = headAndTailIntervals(records, settings.headTail);

  const refs: ChainRef[] = records.map((record) => ({
    steps: record.toolSteps,
    firstId: (step) => `step-${record.runId}-${step}`,
    secondId: (step) => `batch-${record.runId}-${step}`,
    firstQueue: services.dispatcher.stepQueueFor(record.runId),
  }));
  const jobs = await cycleSegments(services.dispatcher.stepQueues[0]!, services.dispatcher.toolQueue, refs);

  return {
    runs: records.length,
    failedRuns: failed,
    steps,
    retriedSteps: timings.retriedSteps,
    wallMs: round(wallMs),
    interval: roundDistribution(distribution(timings.interval)),
    headP50: round(distribution(head).p50),
    tailP50: round(distribution(tail).p50),
    eventSegments: summarizeSegments(
      { modelStep: timings.modelStep, toToolRunning: timings.toToolRunning, toolRun: timings.toolRun, toNextStep: timings.toNextStep },
      {
        modelStep: "step_start → step_end (model step job: history, stream, commit)",
        toToolRunning: "step_end → tool 'running' (enqueue, queue hop, batch claim, mark running)",
        toolRun: "tool 'running' → tool_end (run no-op tool, commit result)",
        toNextStep: "tool_end → next step_start (close batch, enqueue, queue hop, step claim)",
      },
    ),
    jobSegments: jobSegmentsSummary(jobs, "step", "batch"),
    jobSegmentsMissing: jobs.missing,
    perStep: steps > 0 ? perStep(m, steps) : undefined,
    process: probeSummary(m.probe),
    cpu: m.cpu,
  };
}

async function foyaThroughputPhase(driver: FoyaDriver, services: Services, workers: readonly BenchProcess[]): Promise<ThroughputPhase> {
  // Warm-up with the same concurrency so every worker process has its connections and JIT ready.
  await driver.runAll(await driver.createSessions(settings.concurrentRuns), settings.warmupSteps, timeLeft());

  const sessions = await driver.createSessions(settings.concurrentRuns);
  const m = await measured(workers, () => driver.runAll(sessions, settings.throughputSteps, timeLeft()));
  const records = m.value;
  const first = Math.min(...records.map((record) => record.requestedAt));
  const last = Math.max(...records.map((record) => record.endedAt));
  const wallMs = last - first;

  // Committed agent steps, from the database: one succeeded no-op call per agent step.
  const runIds = records.map((record) => record.runId);
  const counted = await sqlPool(services.config).query<{ steps: string; completed: string }>(
    `select (select count(*) from tool_calls where run_id = any($1) and status = 'succeeded') as steps,
            (select count(*) from runs where id = any($1) and status = 'completed') as completed`,
    [runIds],
  );
  const steps = Number(counted.rows[0]?.steps ?? 0);
  const completed = Number(counted.rows[0]?.completed ?? 0);
  const timings = stepTimings(records);
  return {
    workers: workers.length,
    runs: records.length,
    failedRuns: records.length - completed,
    steps,
    retriedSteps: timings.retriedSteps,
    wallMs: round(wallMs),
    stepsPerSecond: round(steps / (wallMs / 1000)),
    interval: roundDistribution(distribution(timings.interval)),
    perStep: steps > 0 ? perStep(m, steps) : undefined,
    process: probeSummary(m.probe),
    cpu: m.cpu,
  };
}

async function baselineLatencyPhase(baseline: BaselineDriver, worker: BenchProcess): Promise<LatencyPhase> {
  await baseline.runChains(1, settings.warmupSteps, timeLeft());
  const started = performance.now();
  const m = await measured([worker], async () => {
    const all: ChainRecord[] = [];
    for (let i = 0; i < settings.latencyRuns; i++) all.push(...(await baseline.runChains(1, settings.latencySteps, timeLeft())));
    return all;
  });
  const wallMs = performance.now() - started;
  const records = m.value;
  const intervals = chainIntervals(records);
  const jobs = await cycleSegments(baseline.queueA, baseline.queueB, BaselineDriver.chainRefs(records));
  return {
    runs: records.length,
    failedRuns: 0,
    steps: intervals.length,
    retriedSteps: 0,
    wallMs: round(wallMs),
    interval: roundDistribution(distribution(intervals)),
    headP50: undefined,
    tailP50: undefined,
    eventSegments: undefined,
    jobSegments: jobSegmentsSummary(jobs, "A", "B"),
    jobSegmentsMissing: jobs.missing,
    perStep: intervals.length > 0 ? perStep(m, intervals.length) : undefined,
    process: probeSummary(m.probe),
    cpu: m.cpu,
  };
}

async function baselineThroughputPhase(baseline: BaselineDriver, workers: readonly BenchProcess[]): Promise<ThroughputPhase> {
  await baseline.runChains(settings.concurrentRuns, settings.warmupSteps, timeLeft());
  const m = await measured(workers, () => baseline.runChains(settings.concurrentRuns, settings.throughputSteps, timeLeft()));
  const records = m.value;
  const first = Math.min(...records.map((record) => record.requestedAt));
  const last = Math.max(...records.map((record) => record.endedAt));
  const wallMs = last - first;
  const steps = records.reduce((sum, record) => sum + record.steps, 0);
  return {
    workers: workers.length,
    runs: records.length,
    failedRuns: 0,
    steps,
    retriedSteps: 0,
    wallMs: round(wallMs),
    stepsPerSecond: round(steps / (wallMs / 1000)),
    interval: roundDistribution(distribution(chainIntervals(records))),
    perStep: steps > 0 ? perStep(m, steps) : undefined,
    process: probeSummary(m.probe),
    cpu: m.cpu,
  };
}

// ---------------------------------------------------------------------------

async function describeEnvironment(services: Services) {
  const git = await execa("git", ["rev-parse", "--short", "HEAD"], { reject: false });
  const dirty = await execa("git", ["status", "--porcelain", "--untracked-files=no"], { reject: false });
  const pgVersion = await sqlPool(services.config).query<{ server_version: string }>("show server_version");
  const redisInfo = await services.redis.info("server");
  return {
    date: new Date().toISOString(),
    commit: git.exitCode === 0 ? `${git.stdout.trim()}${dirty.stdout.trim() ? " (with uncommitted changes)" : ""}` : "unknown",
    node: process.version,
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? "unknown",
    loadAverage1mAtStart: round(loadavg()[0] ?? Number.NaN),
    postgres: pgVersion.rows[0]?.server_version ?? "unknown",
    redis: /redis_version:(\S+)/.exec(redisInfo)?.[1] ?? "unknown",
  };
}

async function main(): Promise<void> {
  const benchEnv = await createBenchEnv({
    maxStepsPerRun: Math.max(settings.latencySteps, settings.throughputSteps) + 10,
    concurrency: settings.concurrency,
  });
  const children: BenchProcess[] = [];
  let services: Services | undefined;
  let baseline: BaselineDriver | undefined;

  // Graceful at the end of a normal run; on a signal or an error, fast: the workers
  // are killed outright and the database and Redis keys go first, because `npm run`
  // and tsx may escalate to SIGKILL if this process lingers after Ctrl-C.
  let cleaning: Promise<void> | undefined;
  const cleanup = (mode: "graceful" | "abort") =>
    (cleaning ??= (async () => {
      if (mode === "graceful") {
        await Promise.allSettled(children.map((child) => child.stop()));
        await baseline?.close().catch(() => {});
        await services?.close().catch(() => {});
        await benchEnv.destroy();
      } else {
        await Promise.allSettled(children.map((child) => child.stop(0)));
        await benchEnv.destroy();
        await baseline?.close().catch(() => {});
        await services?.close().catch(() => {});
      }
    })());
  cleanUpOnSignal(() => cleanup("abort"));

  const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
  try {
    const config = loadConfig(benchEnv.env);
    services = await createServices(config, { role: "bench" });
    const environment = await describeEnvironment(services);
    log("calibrating raw Postgres and Redis round trips");
    const calibration = await calibrate(sqlPool(config), services.redis);
    const app = createApp(services);
    const driver = await FoyaDriver.create(app, services);
    // The bench process already migrated; workers must not race to do it again.
    const workerEnv = benchEnv.env;

    log(`database ${benchEnv.databaseName}, queue prefix ${benchEnv.queuePrefix}`);
    log("starting Foya worker 1");
    const foya1 = await startFoyaWorker(workerEnv, "foya-worker-1");
    children.push(foya1);
    log(`Foya latency: ${settings.latencyRuns} runs × ${settings.latencySteps} agent steps, one at a time`);
    const foyaLatency = await foyaLatencyPhase(driver, services, foya1);
    log(`Foya throughput: ${settings.concurrentRuns} runs × ${settings.throughputSteps} steps, 1 worker`);
    const foyaOne = await foyaThroughputPhase(driver, services, [foya1]);
    log("starting Foya worker 2");
    const foya2 = await startFoyaWorker(workerEnv, "foya-worker-2");
    children.push(foya2);
    log(`Foya throughput: ${settings.concurrentRuns} runs × ${settings.throughputSteps} steps, 2 workers`);
    const foyaTwo = await foyaThroughputPhase(driver, services, [foya1, foya2]);
    await Promise.all([foya1.stop(), foya2.stop()]);

    baseline = await BaselineDriver.create(benchEnv.redisUrl, benchEnv.baselinePrefix);
    log("starting baseline worker 1");
    const base1 = await startBaselineWorker(benchEnv, config, "baseline-worker-1");
    children.push(base1);
    log(`baseline latency: ${settings.latencyRuns} chains × ${settings.latencySteps} steps, one at a time`);
    const baseLatency = await baselineLatencyPhase(baseline, base1);
    log(`baseline throughput: ${settings.concurrentRuns} chains, 1 worker`);
    const baseOne = await baselineThroughputPhase(baseline, [base1]);
    const base2 = await startBaselineWorker(benchEnv, config, "baseline-worker-2");
    children.push(base2);
    log(`baseline throughput: ${settings.concurrentRuns} chains, 2 workers`);
    const baseTwo = await baselineThroughputPhase(baseline, [base1, base2]);
    await Promise.all([base1.stop(), base2.stop()]);

    const report: BenchReport = {
      environment,
      calibration,
      settings: {
        ...settings,
        stepConcurrency: config.workers.stepConcurrency,
        toolConcurrency: config.workers.toolConcurrency,
        // Every process opens its pool the same way (src/db/client.ts), so the same size.
        pgPoolMax: defaultPoolSize,
      },
      aims,
      foya: { latency: foyaLatency, throughput: [foyaOne, foyaTwo] },
      baseline: { latency: baseLatency, throughput: [baseOne, baseTwo] },
      comparison: {
        p50Ratio: round(ratio(foyaLatency.interval.p50, baseLatency.interval.p50)),
        p99Ratio: round(ratio(foyaLatency.interval.p99, baseLatency.interval.p99)),
        throughputRatio1Worker: round(ratio(foyaOne.stepsPerSecond, baseOne.stepsPerSecond)),
        throughputRatio2Workers: round(ratio(foyaTwo.stepsPerSecond, baseTwo.stepsPerSecond)),
        p50AimMet: ratio(foyaLatency.interval.p50, baseLatency.interval.p50) <= aims.p50RatioMax,
        throughputAimMet: Math.max(foyaOne.stepsPerSecond, foyaTwo.stepsPerSecond) >= aims.stepsPerSecondMin,
      },
      cleanup: { databaseDropped: false, redisKeysLeft: -1 },
    };

    log("cleaning up");
    await cleanup("graceful");
    report.cleanup = {
      databaseDropped: true,
      redisKeysLeft:
        (await countRedisPrefix(benchEnv.redisUrl, benchEnv.queuePrefix)) +
        (await countRedisPrefix(benchEnv.redisUrl, benchEnv.baselinePrefix)),
    };

    printReport(report);
    const resultsDir = path.join(benchRoot, "results");
    await mkdir(resultsDir, { recursive: true });
    await writeFile(path.join(resultsDir, "latest.json"), `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nJSON report: ${path.relative(process.cwd(), path.join(resultsDir, "latest.json"))}`);
  } catch (error) {
    printOutputTails(children);
    await cleanup("abort").catch((cleanupError: unknown) => console.error("cleanup failed:", cleanupError));
    throw error;
  }
}

runBenchmark(main);
