import type { FirstTokenFigures } from "./first-token.js";
import { ratio, round } from "./stats.js";

/**
 * What `npm run bench:core` writes to bench/results/core.json, and the table it prints.
 * Steps are agent steps (Foya: model-step job + tool-batch job; floor: job A + job B;
 * peer: model node + tool node); ms are wall-clock.
 */
export interface SystemFigures {
  /** One run at a time: median of the step intervals, ms. */
  stepMsP50: number;
  stepMsP99: number;
  /** 64 runs at once, one worker process: committed steps per second. */
  stepsPerSec64: number;
  /** The same on two worker processes. */
  stepsPerSec64TwoWorkers: number;
}

/** A peer's figures: null where the peer cannot be measured that way. */
export type PeerFigures = { [Key in keyof SystemFigures]: number | null };

export interface CoreReport {
  foya: SystemFigures;
  floor: SystemFigures;
  /** Null when the peer could not be installed or was skipped. */
  peer: PeerFigures | null;
  ratios: {
    /** Foya's figure divided by the floor's, key by key (ms: lower is better; steps/s: higher). */
    foyaOverFloor: SystemFigures;
    foyaOverPeer: PeerFigures | null;
    /** Foya's steps/s on two worker processes divided by one. */
    foyaTwoWorkersOverOne: number;
  };
  /** Time to first token and burst starts (docs/performance.md, "First token and bursts"). */
  firstToken: FirstTokenReport;
  /** Machine CPU per step with 64 runs on one worker, split; null off Linux. */
  /** `foyaTwoWorkers`: the same split over the 64-run windows on two worker processes. */
  cpuPerStep: { foya: CpuSplitFigures | null; floor: CpuSplitFigures | null; foyaTwoWorkers: CpuSplitFigures | null };
  date: string;
}

/** ms, p50 and p99. */
export interface Percentiles {
  p50: number;
  p99: number;
}

/**
 * A run's start to its first model request. Foya: POST over HTTP → the request at a fake
 * OpenAI-compatible server (first-token.ts); floor: enqueue → start of one bare BullMQ job;
 * peer: LangGraph's invoke → its model node's start, in its own process.
 */
export interface FirstTokenReport {
  /** One run at a time. */
  single: { foya: FirstTokenFigures; floorHop: Percentiles & { samples: number }; peer: (Percentiles & { samples: number }) | null };
  /** `runs` runs posted at once, pooled over the bursts. */
  burst: {
    runs: number;
    bursts: number;
    foya: FirstTokenFigures;
    floorHop: Percentiles & { samples: number };
    peer: (Percentiles & { samples: number }) | null;
  };
  ratios: {
    /** Foya's POST sent → first request over the floor's hop, p50 and p99, one run. */
    singleOverFloor: Percentiles;
    singleOverPeer: Percentiles | null;
    burstOverFloor: Percentiles;
    burstOverPeer: Percentiles | null;
  };
}

/** The first-token goals, in ms (docs/performance.md). */
const firstTokenGoals = { singleP50: 8, singleP99: 25, burstP99: 150 };

export function buildFirstTokenReport(single: FirstTokenReport["single"], burst: FirstTokenReport["burst"]): FirstTokenReport {
  const over = (foya: FirstTokenFigures, other: Percentiles | null): Percentiles | null =>
    other ? { p50: round(ratio(foya.sentToRequest.p50, other.p50)), p99: round(ratio(foya.sentToRequest.p99, other.p99)) } : null;
  return {
    single,
    burst,
    ratios: {
      singleOverFloor: over(single.foya, single.floorHop) as Percentiles,
      singleOverPeer: over(single.foya, single.peer),
      burstOverFloor: over(burst.foya, burst.floorHop) as Percentiles,
      burstOverPeer: over(burst.foya, burst.peer),
    },
  };
}

/** The goals the report is read against: Foya near the bare chain, well ahead of the peer, and scaling out. */
/** Goals of the cost users feel (docs/performance.md), within the shape of a BullMQ job per step and per batch. */
const coreGoals = {
  /** Single run: Foya's p50 at most this many times the bare chain's. */
  stepMsP50OverFloorMax: 3.5,
  /** 64 runs, one worker: Foya's steps/s at least this share of the bare chain's... */
  stepsPerSec64OverFloorMin: 0.35,
  /** ...and at least this many times the LangGraph peer's. */
  stepsPerSec64OverPeerMin: 2.5,
  /** Two worker processes at least as fast as one. */
  twoWorkersOverOneMin: 1,
  /** 64 runs, one worker: the machine's CPU per step, ms. */
  machineCpuMsPerStepMax: 4,
};

/** CPU ms per step by process kind, over the 64-run windows on one worker (cpu-split.ts). */
export interface CpuSplitFigures {
  machineMs: number;
  postgresMs: number;
  redisMs: number;
  workersMs: number;
  benchMs: number;
  otherMs: number;
}

const keys = ["stepMsP50", "stepMsP99", "stepsPerSec64", "stepsPerSec64TwoWorkers"] as const;

function divide<Figures extends PeerFigures>(foya: SystemFigures, other: Figures): Figures {
  const entries = keys.map((key) => {
    const value = other[key];
    return [key, value === null ? null : round(ratio(foya[key], value))];
  });
  return Object.fromEntries(entries) as Figures;
}

export function buildCoreReport(
  foya: SystemFigures,
  floor: SystemFigures,
  peer: PeerFigures | null,
  firstToken: FirstTokenReport,
  cpuPerStep: CoreReport["cpuPerStep"],
): CoreReport {
  return {
    foya,
    floor,
    peer,
    ratios: {
      foyaOverFloor: divide(foya, floor),
      foyaOverPeer: peer ? divide(foya, peer) : null,
      foyaTwoWorkersOverOne: round(ratio(foya.stepsPerSec64TwoWorkers, foya.stepsPerSec64)),
    },
    firstToken,
    cpuPerStep,
    date: new Date().toISOString(),
  };
}

/** What the printout says besides the report itself. */
export interface CoreRunNotes {
  header: string[];
  /** Why the peer is absent, when it is. */
  peerSkipped: string | undefined;
  /** One line per measure: its value in each round, to see how stable it was. */
  rounds: string[];
  /** Each goal's ratio in each round (the first A with the first B, the second with the second), to show its spread. */
  goalRounds: { stepMsP50OverFloor: number[]; stepsPerSec64OverPeer: number[]; twoWorkersOverOne: number[] };
  /** Share of the machine's CPUs other processes used during the measurements (see other-load.ts). */
  otherLoadShare: number | undefined;
  elapsedMs: number;
  targetMs: number;
}

const show = (value: number | null | undefined, digits = 2) =>
  value === null || value === undefined || !Number.isFinite(value)
    ? "n/a"
    : value.toLocaleString("en-US", { maximumFractionDigits: digits });
const times = (value: number | null | undefined) =>
  value === null || value === undefined || !Number.isFinite(value) ? "n/a" : `${show(value)}×`;

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows
    .map(
      (row) =>
        `  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join("   ")}`,
    )
    .join("\n");
}

export function printCoreReport(report: CoreReport, notes: CoreRunNotes): void {
  const { foya, floor, peer, ratios } = report;
  const labels: Record<(typeof keys)[number], string> = {
    stepMsP50: "ms per step, single run, p50",
    stepMsP99: "ms per step, single run, p99",
    stepsPerSec64: "steps/s, 64 runs, 1 worker",
    stepsPerSec64TwoWorkers: "steps/s, 64 runs, 2 workers",
  };
  const rows = [["", "Foya", "floor", "LangGraph", "Foya/floor", "Foya/LangGraph"]];
  for (const key of keys) {
    const digits = key.startsWith("stepMs") ? 2 : 0;
    rows.push([
      labels[key],
      show(foya[key], digits),
      show(floor[key], digits),
      show(peer?.[key], digits),
      times(ratios.foyaOverFloor[key]),
      times(ratios.foyaOverPeer?.[key]),
    ]);
  }
  // Judged on the figures, not on the rounded ratios.
  const verdict = (met: boolean | undefined) => (met === undefined ? "not measured" : met ? "MET" : "NOT MET");
  const perRound = (values: number[]) => (values.length > 0 ? `rounds ${values.map((value) => times(round(value))).join(", ")}` : "");
  const goalRows = [
    [
      `single run p50 ≤ ${coreGoals.stepMsP50OverFloorMax}× the floor's`,
      times(ratios.foyaOverFloor.stepMsP50),
      verdict(foya.stepMsP50 <= coreGoals.stepMsP50OverFloorMax * floor.stepMsP50),
      perRound(notes.goalRounds.stepMsP50OverFloor),
    ],
    [
      `64 runs, 1 worker ≥ ${coreGoals.stepsPerSec64OverFloorMin}× the floor's steps/s`,
      times(ratios.foyaOverFloor.stepsPerSec64),
      verdict(foya.stepsPerSec64 >= coreGoals.stepsPerSec64OverFloorMin * floor.stepsPerSec64),
      "",
    ],
    [
      `64 runs, 1 worker ≥ ${coreGoals.stepsPerSec64OverPeerMin}× LangGraph's steps/s`,
      times(ratios.foyaOverPeer?.stepsPerSec64),
      verdict(
        typeof peer?.stepsPerSec64 === "number" ? foya.stepsPerSec64 >= coreGoals.stepsPerSec64OverPeerMin * peer.stepsPerSec64 : undefined,
      ),
      perRound(notes.goalRounds.stepsPerSec64OverPeer),
    ],
    [
      "64 runs, 2 workers ≥ 1 worker (Foya)",
      times(ratios.foyaTwoWorkersOverOne),
      verdict(foya.stepsPerSec64TwoWorkers >= coreGoals.twoWorkersOverOneMin * foya.stepsPerSec64),
      perRound(notes.goalRounds.twoWorkersOverOne),
    ],
    [
      `64 runs, 1 worker: machine CPU per step ≤ ${coreGoals.machineCpuMsPerStepMax} ms`,
      report.cpuPerStep.foya ? `${round(report.cpuPerStep.foya.machineMs)} ms` : "n/a",
      verdict(report.cpuPerStep.foya ? report.cpuPerStep.foya.machineMs <= coreGoals.machineCpuMsPerStepMax : undefined),
      "",
    ],
  ];
  const cpuLine = (name: string, split: CpuSplitFigures | null) =>
    split
      ? `  ${name}: machine ${round(split.machineMs)} = Postgres ${round(split.postgresMs)} + Redis ${round(split.redisMs)} + workers ${round(split.workersMs)} + bench process (API, observers) ${round(split.benchMs)} + rest ${round(split.otherMs)}`
      : `  ${name}: not measured (no /proc)`;

  const out = [
    "",
    "=== Foya core benchmark ===",
    ...notes.header,
    "",
    table(rows),
    "",
    "goals:",
    table(goalRows),
    "",
    "CPU ms per step, 64 runs (on one worker unless named):",
    cpuLine("Foya", report.cpuPerStep.foya),
    cpuLine("floor", report.cpuPerStep.floor),
    cpuLine("Foya, two workers", report.cpuPerStep.foyaTwoWorkers),
    "",
    ...firstTokenLines(report.firstToken),
    "",
    "each round (order A B B A):",
  ];
  out.push(...notes.rounds.map((line) => `  ${line}`));
  if (notes.peerSkipped) out.push(`LangGraph peer skipped: ${notes.peerSkipped}`);
  if (notes.otherLoadShare !== undefined) {
    const share = Math.round(notes.otherLoadShare * 100);
    out.push(
      `other work on the machine during the measurements: about ${share}% of its CPUs${share >= 10 ? " (absolute figures suffer; the side-by-side ratios hold better)" : ""}`,
    );
  }
  const seconds = notes.elapsedMs / 1000;
  out.push(`took ${show(seconds, 0)} s${notes.elapsedMs > notes.targetMs ? ` (WARNING: over the ${notes.targetMs / 1000} s target)` : ""}`);
  console.log(out.join("\n"));
}

function firstTokenLines(report: FirstTokenReport): string[] {
  const ms = (value: Percentiles | null | undefined) => (value ? `${show(value.p50)} / ${show(value.p99)}` : "n/a");
  const ratios = (value: Percentiles | null) => (value ? `${times(value.p50)} / ${times(value.p99)}` : "n/a");
  const { single, burst } = report;
  const rows = [
    ["ms, p50 / p99", "one run", `${burst.runs} runs at once`],
    ["Foya: POST sent → answered", ms(single.foya.postAnswered), ms(burst.foya.postAnswered)],
    ["Foya: POST answered → model request (≤ commit → request)", ms(single.foya.answeredToRequest), ms(burst.foya.answeredToRequest)],
    ["Foya: POST sent → model request (≥ commit → request)", ms(single.foya.sentToRequest), ms(burst.foya.sentToRequest)],
    ["floor: enqueue → job start (one bare BullMQ hop)", ms(single.floorHop), ms(burst.floorHop)],
    ["LangGraph: invoke → model node", ms(single.peer), ms(burst.peer)],
    ["Foya (sent → request) / floor", ratios(report.ratios.singleOverFloor), ratios(report.ratios.burstOverFloor)],
    ["Foya (sent → request) / LangGraph", ratios(report.ratios.singleOverPeer), ratios(report.ratios.burstOverPeer)],
  ];
  const verdict = (met: boolean) => (met ? "MET" : "NOT MET");
  return [
    `first token: one run at a time (${single.foya.samples} runs) and ${burst.bursts} bursts of ${burst.runs} runs, each in a new session; ` +
      `model requests on a reused connection: ${single.foya.reusedConnections} of ${single.foya.samples} and ${burst.foya.reusedConnections} of ${burst.foya.samples}`,
    table(rows),
    "goals (commit → request lies between the answered and sent figures):",
    table([
      [
        `one run: p50 ≤ ${firstTokenGoals.singleP50} ms, p99 ≤ ${firstTokenGoals.singleP99} ms (POST answered → request)`,
        ms(single.foya.answeredToRequest),
        verdict(
          single.foya.answeredToRequest.p50 <= firstTokenGoals.singleP50 && single.foya.answeredToRequest.p99 <= firstTokenGoals.singleP99,
        ),
      ],
      [
        `${burst.runs} at once: p99 ≤ ${firstTokenGoals.burstP99} ms (POST sent → request)`,
        ms(burst.foya.sentToRequest),
        verdict(burst.foya.sentToRequest.p99 <= firstTokenGoals.burstP99),
      ],
    ]),
  ];
}
