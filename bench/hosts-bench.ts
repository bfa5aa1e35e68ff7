/**
 * Hosts benchmark (SPEC W3): what spreading projects over worker hosts costs on one machine, and
 * how long a project takes to move off a dead host, in about 3 minutes on a quiet machine.
 *
 *   npm run bench:hosts        (= tsx bench/hosts-bench.ts)
 *
 * Each host is one worker process with a host id of its own and a workspace root no other shares
 * (support/bench-hosts.ts); the API runs in this process (FoyaDriver).
 *
 * 1. Steps/s with 64 runs at once on 1, 2 and 3 hosts: the scripted zero-latency model and the
 *    no-op tool, one model step + one tool batch per agent step, as in core-bench. Every run is
 *    the only session of a new project, so the projects spread over the live hosts by the
 *    placement rule (the host with the fewest placements); their placements are released after
 *    each window, as the disk budget's eviction would release idle copies, so that the next
 *    window's projects are spread by the same rule and not by where earlier ones stayed. Slots in
 *    1 2 3 3 2 1 host order (hosts are started and stopped between slots), so that drift of the
 *    shared machine reaches each host count alike; a warm-up window follows each start.
 * 2. Failover (support/host-failover.ts): a project with a 100 MB workspace of 1,000 files of
 *    mixed sizes, checkpointed whole, on one of two hosts. Its host is SIGKILLed and a run of one
 *    `read` call starts at once; timed from the kill to that call run on the other host, split
 *    into detection, hand-off, queue hop, rebuild and the call by Postgres timestamps. The dead
 *    host comes back on an empty root, and the next kill hits the other host.
 *
 * Results: a table on stdout, bench/results/hosts.json. Fresh database, queue prefix and host
 * roots, all removed at the end. Knobs (env): BENCH_HOSTS_STEPS (15 steps per run),
 * BENCH_HOSTS_WINDOWS (1 window of 64 runs per slot; 2 for steadier figures),
 * BENCH_HOSTS_FAILOVERS (7), BENCH_HOSTS_FILES (1,000), BENCH_HOSTS_MB (100).
 */
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type pg from "pg";
import { createApp } from "../src/api/app.js";
import { loadConfig } from "../src/config.js";
import { createServices, type Services } from "../src/services.js";
import { createBenchEnv } from "./support/bench-env.js";
import { type BenchHosts, createBenchHosts } from "./support/bench-hosts.js";
import { envInt } from "./support/env-int.js";
import { FoyaDriver } from "./support/foya-driver.js";
import { type FailoverSample, measureFailover, prepareFailoverProject } from "./support/host-failover.js";
import {
  failoverFigures,
  type HostsReport,
  hostsGoalsOf,
  printHostsReport,
  ratioOf,
  type ThroughputFigures,
} from "./support/hosts-report.js";
import { watchOtherLoad } from "./support/other-load.js";
import { benchRoot, printOutputTails, runBenchmark, cleanUpOnSignal } from "./support/processes.js";
import { sqlPool } from "./support/sql-pool.js";
import { round } from "./support/stats.js";

const settings = {
  /** The figures' keys say 64: not a knob. */
  concurrentRuns: 64,
  stepsPerRun: envInt("BENCH_HOSTS_STEPS", 15, 200),
  windowsPerSlot: envInt("BENCH_HOSTS_WINDOWS", 1, 20),
  /** Host counts slot by slot: each count is measured as early as late. */
  slotOrder: [1, 2, 3, 3, 2, 1],
  warmupSteps: 5,
  failovers: envInt("BENCH_HOSTS_FAILOVERS", 7, 100),
  workspaceFiles: envInt("BENCH_HOSTS_FILES", 1_000, 100_000),
  workspaceBytes: envInt("BENCH_HOSTS_MB", 100, 2_000) * 1_000_000,
  waitTimeoutMs: 120_000,
  /** A hang guard; the target is 4 minutes. */
  totalBudgetMs: 10 * 60_000,
  targetMs: 4 * 60_000,
};

const benchStartedAt = performance.now();
const log = (message: string) => console.error(`[bench:hosts ${new Date().toISOString().slice(11, 19)}] ${message}`);

function timeLeft(): number {
  const remaining = benchStartedAt + settings.totalBudgetMs - performance.now();
  if (remaining <= 0) throw new Error(`the benchmark exceeded its ${settings.totalBudgetMs / 60_000} minute budget`);
  return Math.min(settings.waitTimeoutMs, remaining);
}

const hostName = (n: number) => `host-${n}`;

/** Steps committed over a window of wall-clock time, and how the window's projects were placed. */
interface Window {
  steps: number;
  wallMs: number;
  spread: string;
}

/** 64 runs of `steps` steps, each the only session of a new project; the projects' placements released after. */
async function runWindow(driver: FoyaDriver, sql: pg.Pool, steps: number, hostCount: number): Promise<Window> {
  // Projects and sessions first, outside the window: it starts at the first run's request.
  const made = await driver.createSessionsInNewProjects(settings.concurrentRuns);
  const records = await driver.runAll(
    made.map((entry) => entry.sessionId),
    steps,
    timeLeft(),
  );
  const failed = records.filter((record) => record.endStatus !== "completed");
  if (failed.length > 0) throw new Error(`${failed.length} of ${records.length} runs did not complete: ${failed[0]?.endStatus}`);
  const projectIds = made.map((entry) => entry.projectId);
  const placed = await sql.query<{ host_id: string; n: number }>(
    "select host_id, count(*)::int as n from project_placements where project_id = any($1) group by host_id order by host_id",
    [projectIds],
  );
  const counts = Array.from({ length: hostCount }, (_, i) => placed.rows.find((row) => row.host_id === hostName(i + 1))?.n ?? 0);
  if (counts.reduce((sum, n) => sum + n, 0) !== projectIds.length)
    throw new Error(`projects placed off the live hosts: ${JSON.stringify(placed.rows)}`);
  await sql.query("update project_placements set host_id = null where project_id = any($1)", [projectIds]);
  const wallMs = Math.max(...records.map((record) => record.endedAt)) - Math.min(...records.map((record) => record.requestedAt));
  return { steps: records.length * steps, wallMs, spread: counts.join("/") };
}

const stepsPerSecond = (windows: readonly Window[]) =>
  round(windows.reduce((sum, w) => sum + w.steps, 0) / (windows.reduce((sum, w) => sum + w.wallMs, 0) / 1000));

async function measureThroughput(driver: FoyaDriver, sql: pg.Pool, hosts: BenchHosts): Promise<ThroughputFigures> {
  const byHosts = new Map<number, Window[]>([
    [1, []],
    [2, []],
    [3, []],
  ]);
  const slots: ThroughputFigures["slots"] = [];
  const slotWindows: Array<{ hosts: number; windows: Window[] }> = [];
  const setHostCount = async (count: number) => {
    while (hosts.live.size > count) await hosts.stop(hostName(hosts.live.size));
    let started = false;
    while (hosts.live.size < count) {
      await hosts.start(hostName(hosts.live.size + 1));
      started = true;
    }
    // Not measured: JIT, connections and caches of the new worker.
    if (started) {
      log(`warm-up on ${count} host(s)`);
      await runWindow(driver, sql, settings.warmupSteps, count);
    }
  };
  for (const count of settings.slotOrder) {
    await setHostCount(count);
    log(`${settings.windowsPerSlot} × ${settings.concurrentRuns} runs × ${settings.stepsPerRun} steps on ${count} host(s)`);
    const windows: Window[] = [];
    for (let i = 0; i < settings.windowsPerSlot; i++) windows.push(await runWindow(driver, sql, settings.stepsPerRun, count));
    byHosts.get(count)?.push(...windows);
    slots.push({ hosts: count, stepsPerSec: stepsPerSecond(windows), windows: windows.length });
    slotWindows.push({ hosts: count, windows });
  }
  const rate = (count: number) => stepsPerSecond(byHosts.get(count) ?? []);
  const [oneHost, twoHosts, threeHosts] = [rate(1), rate(2), rate(3)];
  // The first half of the slots (1 2 3) and the second (3 2 1) each hold every host count once.
  const half = slotWindows.length / 2;
  const halves = [slotWindows.slice(0, half), slotWindows.slice(half)].map((part) => {
    const of = (count: number) => stepsPerSecond(part.filter((slot) => slot.hosts === count).flatMap((slot) => slot.windows));
    return { twoHostsOverOne: ratioOf(of(2), of(1)), threeHostsOverOne: ratioOf(of(3), of(1)) };
  });
  return {
    stepsPerSec64: { oneHost, twoHosts, threeHosts },
    ratios: { twoHostsOverOne: ratioOf(twoHosts, oneHost), threeHostsOverOne: ratioOf(threeHosts, oneHost) },
    halves,
    slots,
    placements: Object.fromEntries([...byHosts.entries()].map(([count, windows]) => [String(count), windows.map((w) => w.spread)])),
  };
}

async function main(): Promise<void> {
  const loadAtStart = round(loadavg()[0] ?? Number.NaN);
  log(`load average at start ${loadAtStart}`);
  const benchEnv = await createBenchEnv({ maxStepsPerRun: settings.stepsPerRun + 10, concurrency: settings.concurrentRuns });
  const hosts = createBenchHosts(benchEnv.env, log);
  let services: Services | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = (graceMs: number) =>
    (cleaning ??= (async () => {
      await hosts.removeAll(graceMs);
      const results = await Promise.allSettled([services?.close() ?? Promise.resolve()]);
      results.push(...(await Promise.allSettled([benchEnv.destroy()])));
      for (const result of results) if (result.status === "rejected") console.error("cleanup:", result.reason);
    })());
  cleanUpOnSignal(() => cleanup(0));

  try {
    const config = loadConfig(benchEnv.env);
    services = await createServices(config, { role: "bench" });
    const app = createApp(services);
    const sql = sqlPool(config);
    const commit = gitCommit();
    const otherLoad = await watchOtherLoad();

    // --- 1. steps/s on 1, 2 and 3 hosts -----------------------------------------------
    const throughput = await measureThroughput(await FoyaDriver.create(app, services), sql, hosts);

    // --- 2. failover ------------------------------------------------------------------
    // Two hosts: host-1 is still running; host-2 comes back on an emptied root.
    while (hosts.live.size > 1) await hosts.stop(hostName(hosts.live.size));
    await hosts.start(hostName(2), { emptyRoot: true });
    const context = { driver: await FoyaDriver.create(app, services), sql, hosts, timeoutMs: timeLeft, log };
    const project = await prepareFailoverProject(context, { files: settings.workspaceFiles, totalBytes: settings.workspaceBytes });
    const samples: FailoverSample[] = [];
    for (let i = 0; i < settings.failovers; i++) {
      const sample = await measureFailover(context, project);
      samples.push(sample);
      log(
        `failover ${i + 1}/${settings.failovers}: ${sample.victim} → ${sample.survivor}, call ran ${sample.callEndedMs} ms after the kill ` +
          `(detected ${sample.detectedMs}, placed ${sample.placedMs}, claimed ${sample.claimedMs}, restored ${sample.restoredMs} with ${sample.restoredFiles} files)`,
      );
    }
    const otherShare = await otherLoad.finish();

    const failover = failoverFigures(samples, {
      workspace: {
        files: project.workspace.files,
        bytes: project.workspace.bytes,
        smallestBytes: project.workspace.smallest,
        largestBytes: project.workspace.largest,
        checkpointEntries: project.checkpoint.entries,
      },
      firstCheckpointTurnMs: project.firstCheckpointTurnMs,
    });
    const { livenessTimeoutMs, livenessIntervalMs, stepConcurrency, toolConcurrency } = config.workers;
    const report: HostsReport = {
      date: new Date().toISOString(),
      commit,
      node: process.version,
      loadAverageAtStart: loadAtStart,
      otherLoadShare: otherShare === undefined ? null : round(otherShare),
      elapsedMs: Math.round(performance.now() - benchStartedAt),
      settings: {
        concurrentRuns: settings.concurrentRuns,
        stepsPerRun: settings.stepsPerRun,
        windowsPerSlot: settings.windowsPerSlot,
        slotOrder: settings.slotOrder.join(" "),
        failovers: settings.failovers,
        workspaceFiles: settings.workspaceFiles,
        workspaceBytes: settings.workspaceBytes,
        livenessTimeoutMs,
        livenessIntervalMs,
        stepConcurrency,
        toolConcurrency,
      },
      throughput,
      failover,
      goals: hostsGoalsOf(throughput, failover),
    };
    log("cleaning up");
    await cleanup(10_000);
    printHostsReport(
      report,
      [
        `${report.date}  commit ${commit}  node ${process.version}, load avg at start ${loadAtStart}`,
        `one step = model-step job + tool-batch job (scripted zero-latency model, no-op tool); worker concurrency ${stepConcurrency} step + ${toolConcurrency} tool per host`,
        `liveness: renewed every ${livenessIntervalMs} ms, a worker silent ${livenessTimeoutMs} ms is dead`,
      ],
      settings.targetMs,
    );
    const file = path.join(benchRoot, "results", "hosts.json");
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`JSON report: ${path.relative(process.cwd(), file)}`);
  } catch (error) {
    printOutputTails(hosts.processes());
    await cleanup(0);
    throw error;
  }
}

function gitCommit(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim();
    return `${head}${dirty ? " (with uncommitted changes)" : ""}`;
  } catch {
    return "unknown";
  }
}

runBenchmark(main);
