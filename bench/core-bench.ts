/**
 * Core benchmark: the cost of one agent step in Foya against the
 * floor under it and a peer beside it, measured in the same run, in under 3 minutes.
 *
 *   npm run bench:core        (= tsx bench/core-bench.ts)
 *
 * One agent step = a model-step job + a tool-batch job, with the scripted zero-latency
 * model and the no-op tool, so everything measured is orchestration. Three systems:
 * - Foya: the API in this process (FoyaDriver), worker processes as `npm run worker`;
 * - the floor: a bare BullMQ chain of two jobs per step, no Postgres, same Redis and the
 *   same worker settings, in worker processes of its own (baseline-worker.ts);
 * - LangGraph JS with its Postgres checkpointer (the shared peer, `langgraph-peer.mjs`,
 *   installed in /tmp/foya-peers, on a database of its own); skipped when it cannot be installed.
 * Four figures each:
 * - ms per step of a single run, p50 and p99 (Foya: step_start → next step_start, from
 *   the session's events; floor: A start → next A start; LangGraph: one thread's invoke
 *   time ÷ steps, the median over its runs, so no p99);
 * - steps/s with 64 runs at once on one worker process, and on two (LangGraph runs its
 *   graphs in the calling process and has no workers: that figure is not measured).
 *
 * Rounds in A B B A order, so that drift of the shared machine reaches every figure alike:
 * - A: single runs (a Foya run, a floor chain and a LangGraph process in turn, each system
 *   first in turn), then 64 runs on one worker (Foya, floor, LangGraph; the second A runs
 *   the 64-run part first and in the reverse order);
 * - B: 64 runs on two workers (Foya, floor; the second B in the reverse order).
 * Latency figures pool the step intervals of both rounds; steps/s are the steps of both
 * windows over their time. The floor's 64-chain window lasts about a second, so each of its
 * slots holds three windows. An unmeasured warm-up precedes the first round and follows
 * the start of the second workers.
 *
 * Time to first token, in both A rounds on one worker: runs posted over HTTP to the
 * API in this process, each in a new session whose provider profile is a fake OpenAI-compatible
 * server in this process (first-token.ts), from the POST to the run's model request arriving
 * there; one run at a time, then bursts of 50 at once. The floor: one bare BullMQ hop, enqueue →
 * job start, alone and 50 at once; the peer: LangGraph's invoke → model node (one measure).
 *
 * Results: a table on stdout, bench/results/core.json. Fresh database, queue prefixes and
 * peer database, all removed at the end. Knobs (env): BENCH_CORE_LATENCY_RUNS (3 single
 * runs per system and round), BENCH_CORE_LATENCY_STEPS (50), BENCH_CORE_STEPS (15 per run
 * with 64 runs), BENCH_CORE_FIRST_TOKEN_RUNS (12 single runs per round), BENCH_PEER=skip, BENCH_PEERS_DIR (/tmp/foya-peers), BENCH_PEERS_SOURCE.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { execa } from "execa";
import { createApp } from "../src/api/app.js";
import { startHttpServer, type HttpServer } from "../src/api/http-server.js";
import { loadConfig } from "../src/config.js";
import { createServices, type Services } from "../src/services.js";
import { BaselineDriver, chainIntervals, firstStartDelays } from "./support/baseline-driver.js";
import { createBenchEnv } from "./support/bench-env.js";
import { startBaselineWorker, startFoyaWorker } from "./support/bench-workers.js";
import {
  buildCoreReport,
  buildFirstTokenReport,
  printCoreReport,
  type CoreRunNotes,
  type PeerFigures,
  type SystemFigures,
  type CpuSplitFigures,
} from "./support/core-report.js";
import { startFakeModelServer, type FakeModelServer } from "./support/fake-model-server.js";
import { FirstTokenDriver, firstTokenFigures, hopFigures, type FirstTokenSample } from "./support/first-token.js";
import { runLangGraphFirstNode, type PeerFirstNode } from "./support/langgraph-first-node.js";
import { envInt } from "./support/env-int.js";
import { cpuPerStep, type CpuTotals, measureCpu } from "./support/cpu-split.js";
import { FoyaDriver, stepTimings, type RunRecord } from "./support/foya-driver.js";
import { preparePeer, runLangGraphPeer } from "./support/langgraph-peer.js";
import { watchOtherLoad } from "./support/other-load.js";
import { benchRoot, printOutputTails, runBenchmark, type BenchProcess, cleanUpOnSignal } from "./support/processes.js";
import { createScratchDatabase, type ScratchDatabase } from "./support/scratch-database.js";
import { distribution, round } from "./support/stats.js";

const settings = {
  latencyRunsPerRound: envInt("BENCH_CORE_LATENCY_RUNS", 3, 50),
  latencySteps: envInt("BENCH_CORE_LATENCY_STEPS", 50, 200),
  /** The figures' keys say 64: not a knob. */
  concurrentRuns: 64,
  throughputSteps: envInt("BENCH_CORE_STEPS", 15, 200),
  /** First token: single runs per A round (two rounds), and bursts of `burstRuns` per A round. */
  firstTokenRuns: envInt("BENCH_CORE_FIRST_TOKEN_RUNS", 12, 200),
  burstRuns: 50,
  burstsPerRound: 2,
  /** The floor's 64-chain window lasts about a second: it is measured this many times per slot. */
  floorRepeats: 3,
  /** Steps per run of the warm-up before the first measurement of each worker set. */
  warmupSteps: 5,
  /** No single wait may take longer than this... */
  waitTimeoutMs: 90_000,
  /** ...and the whole benchmark gives up after this (a hang guard; the target is 3 minutes). */
  totalBudgetMs: 6 * 60_000,
  targetMs: 3 * 60_000,
};

const benchStartedAt = performance.now();

function timeLeft(): number {
  const remaining = benchStartedAt + settings.totalBudgetMs - performance.now();
  if (remaining <= 0) throw new Error(`the benchmark exceeded its ${settings.totalBudgetMs / 60_000} minute budget`);
  return Math.min(settings.waitTimeoutMs, remaining);
}

const log = (message: string) => console.error(`[bench:core ${new Date().toISOString().slice(11, 19)}] ${message}`);

/** Steps committed over a window of wall-clock time. */
interface Rate {
  steps: number;
  wallMs: number;
  /** The window's CPU, by process kind (absent off Linux). */
  cpu?: CpuTotals | undefined;
}

const stepsPerSecond = (rates: readonly Rate[]): number => {
  const steps = rates.reduce((sum, rate) => sum + rate.steps, 0);
  const wallMs = rates.reduce((sum, rate) => sum + rate.wallMs, 0);
  return round(steps / (wallMs / 1000));
};

function assertCompleted(records: readonly RunRecord[]): void {
  const failed = records.filter((record) => record.endStatus !== "completed");
  if (failed.length > 0) {
    throw new Error(
      `${failed.length} of ${records.length} Foya runs did not complete: ${failed.map((record) => `${record.runId} ${record.endStatus}`).join(", ")}`,
    );
  }
}

/** From the first run requested to the last run ended. */
const windowMs = (records: ReadonlyArray<{ requestedAt: number; endedAt: number }>): number =>
  Math.max(...records.map((record) => record.endedAt)) - Math.min(...records.map((record) => record.requestedAt));

// --- one measurement of each kind -------------------------------------------

async function foyaSingleRun(driver: FoyaDriver, steps: number): Promise<number[]> {
  const records = await driver.runAll(await driver.createSessions(1), steps, timeLeft());
  assertCompleted(records);
  return stepTimings(records).interval;
}

async function foyaConcurrentRuns(driver: FoyaDriver, steps: number, workerPids: readonly number[] = []): Promise<Rate> {
  // Sessions first, outside the window: the window starts at the first run's request.
  const sessions = await driver.createSessions(settings.concurrentRuns);
  const { value: records, cpu } = await measureCpu(workerPids, () => driver.runAll(sessions, steps, timeLeft()));
  assertCompleted(records);
  return { steps: records.length * steps, wallMs: windowMs(records), cpu };
}

async function floorSingleChain(baseline: BaselineDriver, steps: number): Promise<number[]> {
  return chainIntervals(await baseline.runChains(1, steps, timeLeft()));
}

async function floorConcurrentChains(baseline: BaselineDriver, steps: number, workerPids: readonly number[] = []): Promise<Rate> {
  const { value: records, cpu } = await measureCpu(workerPids, () => baseline.runChains(settings.concurrentRuns, steps, timeLeft()));
  return { steps: records.reduce((sum, record) => sum + record.steps, 0), wallMs: windowMs(records), cpu };
}

interface Peer {
  dir: string;
  database: ScratchDatabase;
}

async function peerSingleThread(peer: Peer): Promise<number> {
  return (await runLangGraphPeer(peer.dir, peer.database.url, 1, settings.latencySteps, timeLeft())).msPerStepInChainP50;
}

async function peerConcurrentThreads(peer: Peer): Promise<Rate> {
  const result = await runLangGraphPeer(peer.dir, peer.database.url, settings.concurrentRuns, settings.throughputSteps, timeLeft());
  return { steps: result.chains * result.steps, wallMs: result.wallSec * 1000 };
}

/** A CPU split with its figures rounded for the report. */
function roundSplit(split: ReturnType<typeof cpuPerStep>): CpuSplitFigures | null {
  if (!split) return null;
  return {
    machineMs: round(split.machineMs),
    postgresMs: round(split.postgresMs),
    redisMs: round(split.redisMs),
    workersMs: round(split.workersMs),
    benchMs: round(split.benchMs),
    otherMs: round(split.otherMs),
  };
}

// --- the run ------------------------------------------------------------------

interface Samples {
  foyaIntervals: number[];
  floorIntervals: number[];
  peerSingleMs: number[];
  foyaOne: Rate[];
  foyaTwo: Rate[];
  floorOne: Rate[];
  floorTwo: Rate[];
  peerConcurrent: Rate[];
  firstToken: FirstTokenSample[];
  burstFirstToken: FirstTokenSample[];
  floorHop: number[];
  floorBurstHop: number[];
}

/** Each measure round by round, and each goal's ratio round by round, to show how stable they were. */
function describeRounds(s: Samples, withPeer: boolean): Pick<CoreRunNotes, "rounds" | "goalRounds"> {
  /** Each slot's rate (a slot may hold several windows), slot by slot. */
  const bySlot = (rates: readonly Rate[], windowsPerSlot = 1) => {
    const slots: string[] = [];
    for (let i = 0; i < rates.length; i += windowsPerSlot)
      slots.push(stepsPerSecond(rates.slice(i, i + windowsPerSlot)).toLocaleString("en-US"));
    return slots.join(" / ");
  };
  // Both rounds ran the same number of single runs of the same length.
  const p50ByRound = (values: number[]) =>
    [values.slice(0, values.length / 2), values.slice(values.length / 2)].map((part) => distribution(part).p50);
  const foyaP50s = p50ByRound(s.foyaIntervals);
  const floorP50s = p50ByRound(s.floorIntervals);
  const rounds = [
    `Foya steps/s: 1 worker ${bySlot(s.foyaOne)}; 2 workers ${bySlot(s.foyaTwo)}`,
    `floor steps/s: 1 worker ${bySlot(s.floorOne, settings.floorRepeats)}; 2 workers ${bySlot(s.floorTwo, settings.floorRepeats)}`,
  ];
  if (withPeer)
    rounds.push(
      `LangGraph: steps/s with 64 threads ${bySlot(s.peerConcurrent)}; single thread ms/step ${s.peerSingleMs.map(round).join(" / ")}`,
    );
  rounds.push(`single-run p50 ms: Foya ${foyaP50s.map(round).join(" / ")}; floor ${floorP50s.map(round).join(" / ")}`);

  const rate = (window: Rate) => window.steps / window.wallMs;
  const pairs = <T>(a: T[], b: T[]) => a.slice(0, Math.min(a.length, b.length)).map((value, i) => [value, b[i] as T] as const);
  return {
    rounds,
    goalRounds: {
      stepMsP50OverFloor: pairs(foyaP50s, floorP50s).map(([foya, bare]) => foya / bare),
      stepsPerSec64OverPeer: pairs(s.foyaOne, s.peerConcurrent).map(([foya, langGraph]) => rate(foya) / rate(langGraph)),
      // The first A with the first B, the second A with the second B.
      twoWorkersOverOne: pairs(s.foyaOne, s.foyaTwo).map(([one, two]) => rate(two) / rate(one)),
    },
  };
}

async function main(): Promise<void> {
  const setup = await preparePeer(log);
  if (setup.kind === "skipped") log(`LangGraph peer skipped: ${setup.reason}`);

  const benchEnv = await createBenchEnv({
    maxStepsPerRun: Math.max(settings.latencySteps, settings.throughputSteps) + 10,
    concurrency: settings.concurrentRuns,
  });
  const children = new Set<BenchProcess>();
  let services: Services | undefined;
  let baseline: BaselineDriver | undefined;
  let peer: Peer | undefined;
  let api: HttpServer | undefined;
  let model: FakeModelServer | undefined;
  // The fake model's profile is in the workers' environment before they start.
  const modelServer = await startFakeModelServer();
  model = modelServer;
  const providersDir = await mkdtemp(path.join(tmpdir(), "foya-bench-providers-"));
  const providersFile = path.join(providersDir, "providers.json");
  const modelProfile = "bench-wire";
  await writeFile(
    providersFile,
    JSON.stringify({ profiles: [{ name: modelProfile, kind: "openai-chat", baseUrl: modelServer.baseUrl, model: "bench-model" }] }),
  );
  benchEnv.env.FOYA_PROVIDERS_FILE = providersFile;

  let cleaning: Promise<void> | undefined;
  const cleanup = (graceMs: number) =>
    (cleaning ??= (async () => {
      await Promise.allSettled([...children].map((child) => child.stop(graceMs)));
      const results = await Promise.allSettled([
        benchEnv.destroy(),
        peer?.database.drop() ?? Promise.resolve(),
        baseline?.close() ?? Promise.resolve(),
        (api?.close() ?? Promise.resolve()).then(() => services?.close()),
        model?.close() ?? Promise.resolve(),
        rm(providersDir, { recursive: true, force: true }),
      ]);
      for (const result of results) if (result.status === "rejected") console.error("cleanup:", result.reason);
    })());
  cleanUpOnSignal(() => cleanup(0));

  const start = async (label: string, starting: Promise<BenchProcess>) => {
    const child = await starting;
    children.add(child);
    log(`${label} started (pid ${child.pid})`);
    return child;
  };
  const stop = async (child: BenchProcess) => {
    await child.stop();
    children.delete(child);
  };

  try {
    const config = loadConfig(benchEnv.env);
    services = await createServices(config, { role: "bench" });
    const driver = await FoyaDriver.create(createApp(services), services);
    const liveApi = await startHttpServer(services, { port: 0 });
    api = liveApi;
    const firstToken = await FirstTokenDriver.create(
      { apiUrl: liveApi.url, adminToken: config.api.adminToken ?? "", profile: modelProfile, model: modelServer },
      services,
    );
    const floor = await BaselineDriver.create(benchEnv.redisUrl, benchEnv.baselinePrefix);
    baseline = floor;
    const livePeer = setup.kind === "ready" ? { dir: setup.dir, database: await createScratchDatabase("foya_bench_peer") } : undefined;
    peer = livePeer;
    const git = await execa("git", ["rev-parse", "--short", "HEAD"], { reject: false });
    const dirty = await execa("git", ["status", "--porcelain", "--untracked-files=no"], { reject: false });
    const commit = git.exitCode === 0 ? `${git.stdout.trim()}${dirty.stdout.trim() ? " (with uncommitted changes)" : ""}` : "unknown";
    const loadAtStart = round(loadavg()[0] ?? Number.NaN);

    const [foya1, floor1] = await Promise.all([
      start("Foya worker 1", startFoyaWorker(benchEnv.env, "foya-worker-1")),
      start("floor worker 1", startBaselineWorker(benchEnv, config, "floor-worker-1")),
    ]);
    const s: Samples = {
      foyaIntervals: [],
      floorIntervals: [],
      peerSingleMs: [],
      foyaOne: [],
      foyaTwo: [],
      floorOne: [],
      floorTwo: [],
      peerConcurrent: [],
      firstToken: [],
      burstFirstToken: [],
      floorHop: [],
      floorBurstHop: [],
    };
    const { latencySteps, throughputSteps, warmupSteps } = settings;
    /** The worker processes running now, whose CPU the 64-run windows count. */
    const foyaPids = [foya1.pid];
    const floorPids = [floor1.pid];

    /** Not measured: JIT, connections and caches of the workers, Postgres and the peer's tables. */
    const warmUp = async (workers: string) => {
      log(`warm-up on ${workers}`);
      for (let i = 0; i < 2; i++) {
        await foyaSingleRun(driver, latencySteps);
        await floorSingleChain(floor, latencySteps);
      }
      await foyaConcurrentRuns(driver, warmupSteps);
      await floorConcurrentChains(floor, warmupSteps);
      for (let i = 0; i < 3; i++) await firstToken.startAll(await firstToken.createSessions(1), timeLeft());
      await firstToken.startAll(await firstToken.createSessions(settings.burstRuns), timeLeft());
    };
    /** One run's first token, or a burst's, beside the floor's hop; each goes first in turn. */
    const firstTokenPhase = async (second: boolean) => {
      log(`first token: ${settings.firstTokenRuns} single runs, then ${settings.burstsPerRound} bursts of ${settings.burstRuns}`);
      const pairs = (foya: () => Promise<void>, bare: () => Promise<void>, i: number) =>
        (i + (second ? 1 : 0)) % 2 === 0 ? [foya, bare] : [bare, foya];
      for (let i = 0; i < settings.firstTokenRuns; i++) {
        const sessions = await firstToken.createSessions(1);
        for (const measure of pairs(
          async () => void s.firstToken.push(...(await firstToken.startAll(sessions, timeLeft()))),
          async () => void s.floorHop.push(...firstStartDelays(await floor.runChains(1, 0, timeLeft()))),
          i,
        ))
          await measure();
      }
      for (let i = 0; i < settings.burstsPerRound; i++) {
        const sessions = await firstToken.createSessions(settings.burstRuns);
        for (const measure of pairs(
          async () => void s.burstFirstToken.push(...(await firstToken.startAll(sessions, timeLeft()))),
          async () => void s.floorBurstHop.push(...firstStartDelays(await floor.runChains(settings.burstRuns, 0, timeLeft()))),
          i,
        ))
          await measure();
      }
    };
    const floorConcurrent = async (into: Rate[]) => {
      for (let i = 0; i < settings.floorRepeats; i++) into.push(await floorConcurrentChains(floor, throughputSteps, floorPids));
    };
    /** Round A: single runs, then 64 runs on one worker; the second round turns both orders around. */
    const roundA = async (second: boolean) => {
      const singles = async () => {
        log(
          `single runs: ${settings.latencyRunsPerRound} × ${latencySteps} steps each, ${livePeer ? "Foya, floor and LangGraph" : "Foya and floor"} in turn`,
        );
        const systems: Array<() => Promise<void>> = [
          async () => void s.foyaIntervals.push(...(await foyaSingleRun(driver, latencySteps))),
          async () => void s.floorIntervals.push(...(await floorSingleChain(floor, latencySteps))),
        ];
        if (livePeer) systems.push(async () => void s.peerSingleMs.push(await peerSingleThread(livePeer)));
        // Each system goes first in turn.
        for (let i = 0; i < settings.latencyRunsPerRound; i++) {
          const shift = (i + (second ? 1 : 0)) % systems.length;
          for (const measure of [...systems.slice(shift), ...systems.slice(0, shift)]) await measure();
        }
      };
      const concurrent: Array<[string, () => Promise<void>]> = [
        ["Foya", async () => void s.foyaOne.push(await foyaConcurrentRuns(driver, throughputSteps, foyaPids))],
        ["floor", () => floorConcurrent(s.floorOne)],
      ];
      if (livePeer) concurrent.push(["LangGraph", async () => void s.peerConcurrent.push(await peerConcurrentThreads(livePeer))]);
      if (second) concurrent.reverse();
      const concurrentPhase = async () => {
        for (const [name, measure] of concurrent) {
          log(`${name}: ${settings.concurrentRuns} runs × ${throughputSteps} steps, 1 worker`);
          await measure();
        }
      };
      if (second) {
        await concurrentPhase();
        await firstTokenPhase(second);
        await singles();
      } else {
        await singles();
        await firstTokenPhase(second);
        await concurrentPhase();
      }
    };
    /** Round B: 64 runs on two workers. */
    const roundB = async (second: boolean) => {
      const measures: Array<[string, () => Promise<void>]> = [
        ["Foya", async () => void s.foyaTwo.push(await foyaConcurrentRuns(driver, throughputSteps, foyaPids))],
        ["floor", () => floorConcurrent(s.floorTwo)],
      ];
      if (second) measures.reverse();
      for (const [name, measure] of measures) {
        log(`${name}: ${settings.concurrentRuns} runs × ${throughputSteps} steps, 2 workers`);
        await measure();
      }
    };

    const otherLoad = await watchOtherLoad();
    await warmUp("one worker each");
    if (livePeer) await peerSingleThread(livePeer);
    await roundA(false);
    const [foya2, floor2] = await Promise.all([
      start("Foya worker 2", startFoyaWorker(benchEnv.env, "foya-worker-2")),
      start("floor worker 2", startBaselineWorker(benchEnv, config, "floor-worker-2")),
    ]);
    foyaPids.push(foya2.pid);
    floorPids.push(floor2.pid);
    await warmUp("two workers each");
    await roundB(false);
    await roundB(true);
    await Promise.all([stop(foya2), stop(floor2)]);
    log("worker 2 of each stopped");
    foyaPids.pop();
    floorPids.pop();
    await roundA(true);
    await Promise.all([stop(foya1), stop(floor1)]);
    const peerFirstNode: PeerFirstNode | undefined = livePeer
      ? await runLangGraphFirstNode(
          livePeer.dir,
          livePeer.database.url,
          { singles: 2 * settings.firstTokenRuns, burst: settings.burstRuns, bursts: 2 * settings.burstsPerRound },
          timeLeft(),
        )
      : undefined;
    const otherShare = await otherLoad.finish();

    const figures = (intervals: number[], one: Rate[], two: Rate[]): SystemFigures => {
      const d = distribution(intervals);
      return {
        stepMsP50: round(d.p50),
        stepMsP99: round(d.p99),
        stepsPerSec64: stepsPerSecond(one),
        stepsPerSec64TwoWorkers: stepsPerSecond(two),
      };
    };
    const peerFigures: PeerFigures | null = peer
      ? {
          stepMsP50: round(distribution(s.peerSingleMs).p50),
          stepMsP99: null,
          stepsPerSec64: stepsPerSecond(s.peerConcurrent),
          stepsPerSec64TwoWorkers: null,
        }
      : null;
    const report = buildCoreReport(
      figures(s.foyaIntervals, s.foyaOne, s.foyaTwo),
      figures(s.floorIntervals, s.floorOne, s.floorTwo),
      peerFigures,
      buildFirstTokenReport(
        {
          foya: firstTokenFigures(s.firstToken),
          floorHop: hopFigures(s.floorHop),
          peer: peerFirstNode ? hopFigures(peerFirstNode.single) : null,
        },
        {
          runs: settings.burstRuns,
          bursts: 2 * settings.burstsPerRound,
          foya: firstTokenFigures(s.burstFirstToken),
          floorHop: hopFigures(s.floorBurstHop),
          peer: peerFirstNode ? hopFigures(peerFirstNode.burst) : null,
        },
      ),
      {
        foya: roundSplit(cpuPerStep(s.foyaOne)),
        floor: roundSplit(cpuPerStep(s.floorOne)),
        foyaTwoWorkers: roundSplit(cpuPerStep(s.foyaTwo)),
      },
    );

    log("cleaning up");
    await cleanup(10_000);

    const { rounds, goalRounds } = describeRounds(s, peer !== undefined);
    printCoreReport(report, {
      header: [
        `${report.date}  commit ${commit}  node ${process.version}, load avg at start ${loadAtStart}`,
        `one step = model-step job + tool-batch job (scripted zero-latency model, no-op tool); floor = bare BullMQ chain of two jobs, same worker settings`,
        ...(peer
          ? [
              `LangGraph = LangGraph JS + Postgres checkpointer (durability sync): model node + tool node, in one process; its single-run figure is a thread's mean ms/step`,
            ]
          : []),
        `single run: 2 × ${settings.latencyRunsPerRound} runs × ${latencySteps} steps, one at a time (${s.foyaIntervals.length} Foya intervals); ` +
          `64 runs × ${throughputSteps} steps, twice per worker count; worker concurrency ${config.workers.stepConcurrency} step + ${config.workers.toolConcurrency} tool`,
      ],
      peerSkipped: setup.kind === "skipped" ? setup.reason : undefined,
      rounds,
      goalRounds,
      otherLoadShare: otherShare,
      elapsedMs: performance.now() - benchStartedAt,
      targetMs: settings.targetMs,
    });
    const file = path.join(benchRoot, "results", "core.json");
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`JSON report: ${path.relative(process.cwd(), file)}`);
  } catch (error) {
    printOutputTails(children);
    await cleanup(0);
    throw error;
  }
}

runBenchmark(main);
