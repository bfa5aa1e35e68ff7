import type { CheckpointPhases } from "./checkpoint-phases.js";
import type { RebuildFigures } from "./checkpoint-rebuild.js";
import type { StorageFigures } from "./checkpoint-storage.js";
import { fullCheckpointEvery } from "../../src/store/checkpoints.js";
import { type Distribution, distribution, mean, round, roundDistribution } from "./stats.js";

/**
 * The checkpoint benchmark's figures (bench/checkpoint-bench.ts): turn samples into paired
 * distributions, in-process timings into delta, full and amortized figures, and the printed table.
 */

/** One turn as the session's events saw it (ms). */
export interface TurnSample {
  /** run requested → run_end. */
  turnMs: number;
  /** step_start(0) → step_start(1): the model step and the whole tool batch. */
  stepMs: number;
  /** tool_update running → tool_end: the call and its commit. */
  toolMs: number;
  /** tool_end → step_start(1): the batch's close (with its checkpoint), the hop, the next step's claim. */
  afterToolMs: number;
}

export const turnSegments = ["turnMs", "stepMs", "toolMs", "afterToolMs"] as const;

export interface TurnFigures {
  write: Record<(typeof turnSegments)[number], Distribution>;
  read: Record<(typeof turnSegments)[number], Distribution>;
  /** Paired: each write turn minus the read turn next to it. */
  added: Record<(typeof turnSegments)[number], Distribution>;
}

export function turnFigures(write: TurnSample[], read: TurnSample[]): TurnFigures {
  const of = (samples: TurnSample[]) =>
    Object.fromEntries(
      turnSegments.map((segment) => [segment, roundDistribution(distribution(samples.map((s) => s[segment])))]),
    ) as TurnFigures["write"];
  const added = Object.fromEntries(
    turnSegments.map((segment) => [
      segment,
      roundDistribution(distribution(write.map((sample, i) => sample[segment] - (read[i] as TurnSample)[segment]))),
    ]),
  ) as TurnFigures["added"];
  return { write: of(write), read: of(read), added };
}

export interface DirectTimings {
  /** prepare + commit of the checkpoints written as deltas. */
  deltaTotal: Distribution;
  prepare: Distribution;
  deltaCommit: Distribution;
  /** Commits that wrote the whole tree (every 16th), when any fell in the window. */
  fullCommitMs: number[];
  /** Over a cycle of 16: 15 delta checkpoints at their mean and one full. */
  amortizedMeanMs: number;
}

export interface DirectFigures {
  warm: DirectTimings;
  cold: DirectTimings;
  phasesWarmP50: Record<string, number>;
  phasesColdP50: Record<string, number>;
  /** readdir + lstat of every entry by plain path. */
  lstatWalkMsP50: number;
  /** The same through `/proc/self/fd/<fd>/<name>` with bigint stats, as the capture reaches entries. */
  descriptorLstatWalkMsP50: number;
}

export function timingFigures(samples: Array<{ prepareMs: number; commitMs: number; full: boolean }>): DirectTimings {
  const deltas = samples.filter((sample) => !sample.full);
  const fulls = samples.filter((sample) => sample.full);
  const deltaMean = mean(deltas.map((s) => s.prepareMs + s.commitMs));
  const fullMean = fulls.length > 0 ? mean(fulls.map((s) => s.prepareMs + s.commitMs)) : Number.NaN;
  return {
    deltaTotal: roundDistribution(distribution(deltas.map((s) => s.prepareMs + s.commitMs))),
    prepare: roundDistribution(distribution(samples.map((s) => s.prepareMs))),
    deltaCommit: roundDistribution(distribution(deltas.map((s) => s.commitMs))),
    fullCommitMs: fulls.map((s) => round(s.commitMs)),
    amortizedMeanMs: round(Number.isNaN(fullMean) ? deltaMean : (deltaMean * (fullCheckpointEvery - 1) + fullMean) / fullCheckpointEvery),
  };
}

export function phaseMedians(phases: CheckpointPhases[]): Record<string, number> {
  const keys = ["latestMs", "previousTreeMs", "captureMs", "blobsMs", "deltaMs", "digestMs", "commitMs", "totalMs"] as const;
  const deltas = phases.filter((p) => !p.full);
  return {
    ...Object.fromEntries(keys.map((key) => [key, round(distribution(deltas.map((p) => p[key])).p50)])),
    hashedFilesP50: distribution(phases.map((p) => p.hashed)).p50,
    samples: deltas.length,
  };
}

export function printCheckpointReport(report: CheckpointReport): void {
  const { settings } = report;
  const subjects = settings.workspaces.map((workspace) => ({ size: workspace.files }));
  const f = (value: number) => value.toFixed(2).padStart(9);
  console.log(`\nworkspace checkpoints (SPEC W1)  ${report.date}  commit ${report.commit}  node ${report.node}`);
  console.log(
    `load average at start ${report.loadAverageAtStart.join(" ")}; other processes' CPU share over the run ${report.otherLoadShare ?? "n/a"}; ${Math.round(report.elapsedMs / 1000)} s`,
  );
  console.log(`\n1. ms per turn (one call + closing text step), ${settings.turns} write and ${settings.turns} read turns per size`);
  console.log(
    `${"files".padStart(7)} ${"segment".padEnd(12)} ${["write p50", "read p50", "added p50", "added p90"].map((h) => h.padStart(9)).join(" ")}`,
  );
  for (const { size } of subjects) {
    const t = report.turns[size] as TurnFigures;
    for (const segment of turnSegments)
      console.log(
        `${String(size).padStart(7)} ${segment.padEnd(12)} ${[t.write[segment].p50, t.read[segment].p50, t.added[segment].p50, t.added[segment].p90].map(f).join(" ")}`,
      );
  }
  console.log(
    `   the first checkpoint of each workspace (every file hashed and put as a blob) took a turn of ${subjects.map(({ size }) => `${report.firstCheckpointTurnMs[size]} ms (${size} files)`).join(", ")}`,
  );
  console.log(
    "   turnMs: request → run_end; stepMs: step 0 → step 1; toolMs: running → tool_end; afterToolMs: tool_end → step 1 (holds the checkpoint)",
  );
  console.log(`\n2. prepareCheckpoint + commitCheckpoint in this process, one file changed (ms; delta checkpoints)`);
  console.log(
    `${"files".padStart(7)} ${"cache".padEnd(6)} ${["total p50", "total p90", "prepare", "commit", "full cmt", "amortized"].map((h) => h.padStart(9)).join(" ")}`,
  );
  for (const { size } of subjects) {
    const d = report.direct[size] as DirectFigures;
    for (const [name, t] of [
      ["warm", d.warm],
      ["cold", d.cold],
    ] as const)
      console.log(
        `${String(size).padStart(7)} ${name.padEnd(6)} ${[t.deltaTotal.p50, t.deltaTotal.p90, t.prepare.p50, t.deltaCommit.p50, t.fullCommitMs.length > 0 ? mean(t.fullCommitMs) : Number.NaN, t.amortizedMeanMs].map(f).join(" ")}`,
      );
  }
  console.log(
    "   where it goes (p50 ms of each step, delta checkpoints), beside a readdir + lstat walk of the tree by path, and by descriptor with bigint stats as the capture does:",
  );
  const phaseKeys = ["latestMs", "previousTreeMs", "captureMs", "blobsMs", "deltaMs", "digestMs", "commitMs", "totalMs"];
  console.log(
    `${"files".padStart(7)} ${"cache".padEnd(6)} ${[...phaseKeys.map((k) => k.replace(/Ms$/, "")), "lstat", "fd lstat"].map((h) => h.padStart(9)).join(" ")}`,
  );
  for (const { size } of subjects) {
    const d = report.direct[size] as DirectFigures;
    for (const [name, p] of [
      ["warm", d.phasesWarmP50],
      ["cold", d.phasesColdP50],
    ] as const)
      console.log(
        `${String(size).padStart(7)} ${name.padEnd(6)} ${[...phaseKeys.map((k) => p[k] ?? Number.NaN), d.lstatWalkMsP50, d.descriptorLstatWalkMsP50].map(f).join(" ")}`,
      );
  }
  console.log(`\n3. storage per checkpoint, one file changed (rows / bytes; a full tree every ${fullCheckpointEvery}th)`);
  console.log(
    `${"files".padStart(7)} ${"source".padEnd(7)} ${["delta rows", "delta B", "full rows", "full B", "amort rows", "amort B", "blob B"].map((h) => h.padStart(10)).join(" ")}`,
  );
  for (const { size } of subjects) {
    const s = report.storage[size] as { workerTurns: StorageFigures; direct: StorageFigures };
    for (const [name, x] of [
      ["turns", s.workerTurns],
      ["direct", s.direct],
    ] as const)
      console.log(
        `${String(size).padStart(7)} ${name.padEnd(7)} ${[x.deltaRows.p50, x.deltaRowBytes.p50, x.fullTreeRows ?? Number.NaN, x.fullTreeRowBytes ?? Number.NaN, x.amortizedRows, x.amortizedRowBytes, x.blobBytesPerCheckpoint].map((v) => String(round(v)).padStart(10)).join(" ")}`,
      );
  }
  console.log("   turns: the write tool's file change stores the same new blob the checkpoint references (content-addressed, once)");
  const r = report.rebuild;
  console.log(
    `\n4. rebuild of ${r.files} files (${round(r.bytes / 1e6)} MB, ${r.chainDeltas} deltas on a full tree) from Postgres: ${r.ms} ms (budget ${settings.rebuildBudgetMs} ms: ${report.budgets.rebuild10kMs.met ? "met" : "NOT met"})`,
  );
  console.log(
    `   tree read ${r.treeReadMs} ms; ${r.blobFetches} blob SELECTs (of up to 32 blobs each): the writes waited ~${r.waitedForBlobsMs} ms for them; ` +
      `the same blobs fetched alone ${r.fetchOnlyMs} ms; a full capture of the result (≈ the rebuild's own verify pass) ${r.fullCaptureMs} ms; cp -a of the result ${r.cpMs} ms`,
  );
  const b = report.budgets.addedP50Ms10k;
  console.log(
    `\nbudget: ≤ ${b.budget} ms p50 added for one changed file in 10,000 files: ${b.met ? "met" : "NOT met"} ` +
      `(a batch of one door write: ${b.doorWrite} ms; a layered shell call that also made a folder: ${b.layeredCall} ms). ` +
      `A write turn costs ${b.writeMinusReadTurn} ms more than a read turn at 10,000 files, ${b.writeMinusReadTurnSmallest} ms at ${b.smallestSize}: ` +
      `what grows with the workspace is the checkpoint; the rest is the write itself (its record, its blob, the settle). ` +
      `A walk of the whole folder (no changed paths given): in-process warm ${b.directWarm} ms, cold ${b.directCold} ms.`,
  );
  const w = report.budgets.walkP50Ms10k;
  console.log(
    `budget: ≤ ${w.budget} ms p50 for a batch with a background command running (the folder walked), per 10,000 files: ${w.met ? "met" : "NOT met"} (${w.measured} ms)`,
  );
}

export interface CheckpointReport {
  date: string;
  commit: string;
  node: string;
  loadAverageAtStart: number[];
  firstCheckpointTurnMs: Record<number, number>;
  otherLoadShare: number | null;
  elapsedMs: number;
  settings: { turns: number; rebuildBudgetMs: number; workspaces: Array<{ files: number; folders: number; bytes: number }> };
  turns: Record<number, TurnFigures>;
  direct: Record<number, DirectFigures>;
  storage: Record<number, { workerTurns: StorageFigures | undefined; direct: StorageFigures | undefined }>;
  rebuild: RebuildFigures;
  budgets: {
    addedP50Ms10k: {
      budget: number;
      doorWrite: number;
      layeredCall: number;
      writeMinusReadTurn: number;
      writeMinusReadTurnSmallest: number;
      smallestSize: number;
      writeMinusReadAfterTool: number;
      directWarm: number;
      directCold: number;
      met: boolean;
    };
    walkP50Ms10k: { budget: number; measured: number; met: boolean };
    rebuild10kMs: { budget: number; measured: number; met: boolean };
  };
  /** Per size and batch kind: what a checkpoint adds to the batch (`checkpoint-batch-kinds.ts`). */
  batchKinds: Record<number, Record<string, { p50: number; p95: number; walked: number; samples: number }>>;
}
