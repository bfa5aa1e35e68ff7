/**
 * Workspace checkpoint benchmark (SPEC W1): what the checkpoint after a tool batch costs, in time
 * and in storage, and how long a lost workspace takes to rebuild. Three workspaces of 100, 1,000
 * and 10,000 files (about 10 KB each, 10 × 10 nested folders), made directly on disk in their
 * projects' workspace folders before the runs, owned like the workspace.
 *
 * 1. Turns through a real worker process (scripted zero-latency model): one step with one call,
 *    then a closing text step. A `write` of one file (a batch that may change the workspace: it
 *    closes with a checkpoint) against a `read` of the same file (read-only: no checkpoint), in the
 *    same session, alternating, every size in turn. Reported per size: each kind's ms per turn and
 *    per segment, and the paired difference write − read. The difference holds the write tool's own
 *    work too (its file-change record: blobs, diff); the segment from `tool_end` to the next
 *    `step_start` holds the checkpoint (captured after the call's commit, written in the settle
 *    transaction) and not the tool.
 * 2. The same two functions the worker calls, `prepareCheckpoint` + `commitCheckpoint`, timed in
 *    this process on the same workspaces after a one-file change: warm (the previous tree in this
 *    process's `knownTrees`, the normal case on one host) and cold (the tree read back from
 *    Postgres: a restarted worker, an evicted cache, another worker process on the host), then
 *    the same steps one by one (support/checkpoint-phases.ts) to say which dominates, beside a
 *    plain readdir + lstat walk of the tree.
 * 3. Storage per checkpoint: checkpoint_entries rows and their bytes, content_blobs bytes of the
 *    tenant, for the one-file change (a full tree every 16th checkpoint: amortized).
 * 4. Rebuild: the 10,000-file workspace gone and rebuilt from its latest checkpoint by
 *    `restoreMissingWorkspace`, its reads timed, checked against the checkpoint's tree digest;
 *    `cp -a` of the result and a fetch of the same blobs alone timed beside it
 *    (support/checkpoint-rebuild.ts).
 *
 * Own database, queue prefix and workspaces folder, all removed at the end. Not part of
 * `npm run bench`. Knobs (env): BENCH_CHECKPOINT_TURNS (20 write and 20 read turns per size),
 * BENCH_CHECKPOINT_DIRECT (32 warm in-process checkpoints per size), BENCH_CHECKPOINT_COLD (12),
 * BENCH_CHECKPOINT_PHASES (16 warm, half as many cold).
 *
 *     npx tsx bench/checkpoint-bench.ts
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { createApp } from "../src/api/app.js";
import { createKnownTrees } from "../src/checkpoints/known-trees.js";
import {
  type CheckpointDeps,
  type CheckpointScope,
  commitCheckpoint,
  prepareCheckpoint,
  rememberCheckpoint,
} from "../src/checkpoints/take-checkpoint.js";
import { loadConfig } from "../src/config.js";
import type { ProjectId, RunId, SessionId, TenantId } from "../src/ids.js";
import { createServices, type Services } from "../src/services.js";
import { type OpenedStore, openStore } from "../src/store/open-store.js";
import { createBenchEnv } from "./support/bench-env.js";
import { startFoyaWorker } from "./support/bench-workers.js";
import { type CheckpointPhases, descriptorLstatWalk, lstatWalk, timedCheckpointPhases } from "./support/checkpoint-phases.js";
import { envInt } from "./support/env-int.js";
import { FoyaDriver, stepTimings } from "./support/foya-driver.js";
import { type BatchKind, type BatchKindFigures, printBatchKinds, timeBatchKinds } from "./support/checkpoint-batch-kinds.js";
import { rebuildFigures } from "./support/checkpoint-rebuild.js";
import {
  type CheckpointReport,
  type DirectFigures,
  phaseMedians,
  printCheckpointReport,
  type TurnFigures,
  type TurnSample,
  timingFigures,
  turnFigures,
} from "./support/checkpoint-report.js";
import { type StorageFigures, type StorageMark, storageMark, storageSince } from "./support/checkpoint-storage.js";
import { type NestedWorkspace, populateNestedWorkspace, textOfSize } from "./support/nested-workspace.js";
import { watchOtherLoad } from "./support/other-load.js";
import { type BenchProcess, benchRoot, printOutputTails, runBenchmark, cleanUpOnSignal } from "./support/processes.js";
import { sqlPool } from "./support/sql-pool.js";
import { distribution, round } from "./support/stats.js";

const settings = {
  sizes: [100, 1_000, 10_000],
  turns: envInt("BENCH_CHECKPOINT_TURNS", 20, 200),
  direct: envInt("BENCH_CHECKPOINT_DIRECT", 32, 500),
  cold: envInt("BENCH_CHECKPOINT_COLD", 12, 200),
  phases: envInt("BENCH_CHECKPOINT_PHASES", 16, 200),
  /** Checkpoints per batch kind (door write, layered bash call, background command) and size. */
  kinds: envInt("BENCH_CHECKPOINT_KINDS", 48, 500),
  /** Bytes written by each one-file change. */
  changeBytes: 10_000,
  waitTimeoutMs: 120_000,
  /** The budgets: added p50 for one changed file in 10,000 files, and a rebuild of them. */
  addedBudgetMs: 5,
  /** A batch with a background command running (the folder walked), per 10,000 files. */
  walkBudgetMs: 60,
  rebuildBudgetMs: 10_000,
};

const benchStartedAt = performance.now();
const log = (message: string) => console.error(`[bench:checkpoints ${new Date().toISOString().slice(11, 19)}] ${message}`);

/** One project of the benchmark: a tenant of its own (its blobs counted alone), a session, a workspace. */
interface Subject {
  size: number;
  driver: FoyaDriver;
  sessionId: SessionId;
  tenantId: TenantId;
  projectId: ProjectId;
  workspace: NestedWorkspace;
}

type TurnKind = "write" | "read";

async function main(): Promise<void> {
  const loadAtStart = loadavg().map(round);
  log(`load average at start ${loadAtStart.join(" ")}`);
  const benchEnv = await createBenchEnv({ maxStepsPerRun: 10, concurrency: 4 });
  const children = new Set<BenchProcess>();
  let services: Services | undefined;
  let opened: OpenedStore | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = (graceMs: number) =>
    (cleaning ??= (async () => {
      await Promise.allSettled([...children].map((child) => child.stop(graceMs)));
      const results = await Promise.allSettled([opened?.close() ?? Promise.resolve(), services?.close() ?? Promise.resolve()]);
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
    const worker = await startFoyaWorker(benchEnv.env, "foya-worker");
    children.add(worker);
    log(`worker started (pid ${worker.pid})`);

    // --- the workspaces ---------------------------------------------------------------
    const subjects: Subject[] = [];
    for (const size of settings.sizes) {
      const driver = await FoyaDriver.create(app, services);
      const [sessionId] = await driver.createSessions(1);
      const project = await sql.query<{ tenant_id: TenantId; workspace_path: string }>(
        "select tenant_id, workspace_path from projects where id = $1",
        [driver.projectId],
      );
      const row = project.rows[0];
      if (!sessionId || !row) throw new Error("no session or project");
      const made = performance.now();
      const workspace = populateNestedWorkspace(row.workspace_path, size);
      log(`${size} files (${mb(workspace.bytes)} MB, ${workspace.folders} folders) made in ${Math.round(performance.now() - made)} ms`);
      subjects.push({ size, driver, sessionId, tenantId: row.tenant_id, projectId: driver.projectId as ProjectId, workspace });
    }

    const checkpointCount = async (subject: Subject) =>
      Number(
        (await sql.query<{ n: string }>("select count(*) as n from workspace_checkpoints where project_id = $1", [subject.projectId]))
          .rows[0]?.n,
      );
    let changes = 0;
    const turn = async (subject: Subject, kind: TurnKind): Promise<TurnSample> => {
      const call =
        kind === "write"
          ? {
              tool: "write",
              args: { path: subject.workspace.middleFile, content: textOfSize(settings.changeBytes, `change ${++changes}`).toString() },
            }
          : { tool: "read", args: { path: subject.workspace.middleFile } };
      const before = await checkpointCount(subject);
      const input = JSON.stringify({ script: [[call], [{ text: "done" }]] });
      const [record] = await subject.driver.runAll([subject.sessionId], 1, settings.waitTimeoutMs, input);
      if (record?.endStatus !== "completed") throw new Error(`a ${kind} turn ended ${record?.endStatus}`);
      await expectSucceeded(record.runId);
      const taken = (await checkpointCount(subject)) - before;
      if (taken !== (kind === "write" ? 1 : 0)) throw new Error(`a ${kind} turn took ${taken} checkpoints`);
      const timings = stepTimings([record]);
      const [stepMs, toolMs, afterToolMs] = [timings.interval[0], timings.toolRun[0], timings.toNextStep[0]];
      if (stepMs === undefined || toolMs === undefined || afterToolMs === undefined) throw new Error(`a ${kind} turn missed events`);
      return { turnMs: record.endedAt - record.requestedAt, stepMs, toolMs, afterToolMs };
    };
    const expectSucceeded = async (runId: RunId) => {
      const calls = await sql.query<{ status: string }>("select status from tool_calls where run_id = $1", [runId]);
      if (calls.rows.length !== 1 || calls.rows[0]?.status !== "succeeded") throw new Error(`run ${runId}: ${JSON.stringify(calls.rows)}`);
    };

    // --- 1. turns through the worker ------------------------------------------------------
    const firstCheckpointTurnMs: Record<number, number> = {};
    for (const subject of subjects) {
      // The first write hashes and stores the whole tree; then the worker is warm for this project.
      firstCheckpointTurnMs[subject.size] = round((await turn(subject, "write")).turnMs);
      log(
        `${subject.size} files: first checkpoint (the whole tree hashed and stored) in a turn of ${firstCheckpointTurnMs[subject.size]} ms`,
      );
      await turn(subject, "read");
      await turn(subject, "write");
    }
    const storageBefore = await Promise.all(subjects.map((subject) => storageMark(sql, subject)));
    const samples = new Map(subjects.map((subject) => [subject.size, { write: [] as TurnSample[], read: [] as TurnSample[] }]));
    log(`turns: ${settings.turns} write + ${settings.turns} read per size, alternating, sizes in turn`);
    for (let rep = 0; rep < settings.turns; rep++) {
      for (let k = 0; k < subjects.length; k++) {
        const subject = subjects[(rep + k) % subjects.length] as Subject;
        const into = samples.get(subject.size);
        if (!into) throw new Error("no samples");
        const order: TurnKind[] = rep % 2 === 0 ? ["write", "read"] : ["read", "write"];
        for (const kind of order) into[kind].push(await turn(subject, kind));
      }
    }
    const workerStorage = await Promise.all(
      subjects.map(async (subject, index) => storageSince(sql, subject, storageBefore[index] as StorageMark, settings.turns)),
    );
    await worker.stop();
    children.delete(worker);
    log("worker stopped");

    // --- 2. the same functions in this process ------------------------------------------
    opened = openStore(config.database.url);
    const store = opened.store;
    const direct: Record<number, DirectFigures> = {};
    const batchKinds: Record<number, Record<BatchKind, BatchKindFigures>> = {};
    const directStorage: Record<number, StorageFigures> = {};
    for (const subject of subjects) {
      const deps: CheckpointDeps = { store, knownTrees: createKnownTrees(), maxFileBytes: 0, config, logger: services.logger };
      const scope: CheckpointScope = {
        tenantId: subject.tenantId,
        projectId: subject.projectId,
        sessionId: null,
        runId: null,
        stepIndex: null,
        workspaceDir: subject.workspace.root,
        reason: "batch",
      };
      const changeOneFile = () =>
        writeFileSync(
          path.join(subject.workspace.root, subject.workspace.middleFile),
          textOfSize(settings.changeBytes, `change ${++changes}`),
        );
      const once = async (warm: boolean) => {
        changeOneFile();
        if (!warm) deps.knownTrees.forget(subject.projectId);
        const started = performance.now();
        const prepared = await prepareCheckpoint(deps, scope);
        const prepareMs = performance.now() - started;
        const row = await store.transaction((tx) => commitCheckpoint(tx, prepared));
        const commitMs = performance.now() - started - prepareMs;
        if (!row) throw new Error(`a checkpoint of ${subject.size} files was skipped: ${JSON.stringify(prepared)}`);
        rememberCheckpoint(deps, row, prepared);
        return { prepareMs, commitMs, full: row.baseId === null };
      };
      log(`${subject.size} files: ${settings.direct} warm, ${settings.cold} cold checkpoints in this process`);
      await once(false);
      const mark = await storageMark(sql, subject);
      const warm = [];
      for (let i = 0; i < settings.direct; i++) warm.push(await once(true));
      directStorage[subject.size] = await storageSince(sql, subject, mark, settings.direct);
      const cold = [];
      for (let i = 0; i < settings.cold; i++) cold.push(await once(false));
      const phasesWarm: CheckpointPhases[] = [];
      const phasesCold: CheckpointPhases[] = [];
      for (let i = 0; i < settings.phases + Math.ceil(settings.phases / 2); i++) {
        const isWarm = i < settings.phases;
        changeOneFile();
        if (!isWarm) deps.knownTrees.forget(subject.projectId);
        const { phases, row, prepared } = await timedCheckpointPhases({ ...deps, store }, scope);
        rememberCheckpoint(deps, row, prepared);
        (isWarm ? phasesWarm : phasesCold).push(phases);
      }
      log(`${subject.size} files: ${settings.kinds} checkpoints after a door write, a layered bash call, a background command`);
      batchKinds[subject.size] = await timeBatchKinds(
        { ...deps, store },
        scope,
        {
          workspacesDir: config.workspaces.dir,
          middleFile: subject.workspace.middleFile,
          text: (head) => textOfSize(settings.changeBytes, head),
        },
        settings.kinds,
      );
      const walks: number[] = [];
      const descriptorWalks: number[] = [];
      for (let i = 0; i < 7; i++) {
        let started = performance.now();
        lstatWalk(subject.workspace.root);
        walks.push(performance.now() - started);
        started = performance.now();
        descriptorLstatWalk(subject.workspace.root);
        descriptorWalks.push(performance.now() - started);
      }
      direct[subject.size] = {
        warm: timingFigures(warm),
        cold: timingFigures(cold),
        phasesWarmP50: phaseMedians(phasesWarm),
        phasesColdP50: phaseMedians(phasesCold),
        lstatWalkMsP50: round(distribution(walks).p50),
        descriptorLstatWalkMsP50: round(distribution(descriptorWalks).p50),
      };
    }

    // --- 4. rebuild ---------------------------------------------------------------------
    const largest = subjects[subjects.length - 1] as Subject;
    const rebuild = await rebuildFigures(store, sql, {
      tenantId: largest.tenantId,
      projectId: largest.projectId,
      root: largest.workspace.root,
      owner: largest.workspace.owner,
      log,
    });
    const otherShare = await otherLoad.finish();

    // --- the report ---------------------------------------------------------------------
    const turns = Object.fromEntries(
      subjects.map((subject) => {
        const { write, read } = samples.get(subject.size) as { write: TurnSample[]; read: TurnSample[] };
        return [subject.size, turnFigures(write, read)];
      }),
    );
    const storage = Object.fromEntries(
      subjects.map((subject, index) => [subject.size, { workerTurns: workerStorage[index], direct: directStorage[subject.size] }]),
    );
    const largestTurns = turns[largest.size] as TurnFigures;
    const smallest = subjects[0] as Subject;
    const smallestTurns = turns[smallest.size] as TurnFigures;
    const largestDirect = direct[largest.size] as DirectFigures;
    const largestKinds = batchKinds[largest.size] as Record<BatchKind, BatchKindFigures>;
    const report: CheckpointReport = {
      date: new Date().toISOString(),
      commit,
      node: process.version,
      loadAverageAtStart: loadAtStart,
      otherLoadShare: otherShare === undefined ? null : round(otherShare),
      elapsedMs: Math.round(performance.now() - benchStartedAt),
      settings: {
        ...settings,
        workspaces: subjects.map(({ size, workspace }) => ({ files: size, folders: workspace.folders, bytes: workspace.bytes })),
      },
      firstCheckpointTurnMs,
      turns,
      direct,
      storage,
      rebuild,
      batchKinds,
      budgets: {
        addedP50Ms10k: {
          budget: settings.addedBudgetMs,
          doorWrite: largestKinds.door.p50,
          layeredCall: largestKinds.layered.p50,
          writeMinusReadTurn: largestTurns.added.turnMs.p50,
          writeMinusReadTurnSmallest: smallestTurns.added.turnMs.p50,
          smallestSize: smallest.size,
          writeMinusReadAfterTool: largestTurns.added.afterToolMs.p50,
          directWarm: largestDirect.warm.deltaTotal.p50,
          directCold: largestDirect.cold.deltaTotal.p50,
          met: largestKinds.door.p50 <= settings.addedBudgetMs,
        },
        walkP50Ms10k: {
          budget: (settings.walkBudgetMs * largest.size) / 10_000,
          measured: largestKinds.walk.p50,
          met: largestKinds.walk.p50 <= (settings.walkBudgetMs * largest.size) / 10_000,
        },
        rebuild10kMs: { budget: settings.rebuildBudgetMs, measured: rebuild.ms, met: rebuild.ms <= settings.rebuildBudgetMs },
      },
    };
    log("cleaning up");
    await cleanup(10_000);
    printCheckpointReport(report);
    printBatchKinds(batchKinds, settings);
    const file = path.join(benchRoot, "results", "checkpoints.json");
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`JSON report: ${path.relative(process.cwd(), file)}`);
  } catch (error) {
    printOutputTails(children);
    await cleanup(0);
    throw error;
  }
}

const mb = (bytes: number) => round(bytes / 1_000_000);

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
