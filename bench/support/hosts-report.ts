import type { FailoverSample } from "./host-failover.js";
import { type Distribution, distribution, ratio, round, roundDistribution } from "./stats.js";

/**
 * What `npm run bench:hosts` writes to bench/results/hosts.json, and what it prints. Steps are
 * agent steps (a model-step job + a tool-batch job); ms are wall-clock; failover times are from
 * the SIGKILL, read from Postgres timestamps.
 */

/** The goals the figures are read against. */
const hostsGoals = {
  /** On two cores more hosts bring no gain; they may cost at most 10 %. */
  moreHostsOverOneMin: 0.9,
  /** A host's death to the moved project's next call running, 100 MB workspace. */
  failoverMaxMs: 10_000,
};

export interface ThroughputFigures {
  /** 64 runs at once, steps committed per second over all windows of that host count. */
  stepsPerSec64: { oneHost: number; twoHosts: number; threeHosts: number };
  ratios: { twoHostsOverOne: number; threeHostsOverOne: number };
  /** The same ratios within the first half of the slots (1 2 3) and within the second (3 2 1): their spread is the drift. */
  halves: Array<{ twoHostsOverOne: number; threeHostsOverOne: number }>;
  /** Each slot's steps/s, in the order measured. */
  slots: Array<{ hosts: number; stepsPerSec: number; windows: number }>;
  /** How each window's 64 projects were placed over the live hosts, e.g. "22/21/21". */
  placements: Record<string, string[]>;
}

export interface FailoverFigures {
  workspace: { files: number; bytes: number; smallestBytes: number; largestBytes: number; checkpointEntries: number };
  firstCheckpointTurnMs: number;
  /** Death → the moved batch's call ran on the rebuilt copy (`tool_end`). */
  deathToCallMs: Distribution;
  /** Death → `workspace_restored`: the workspace ready on the survivor. */
  deathToRestoredMs: Distribution;
  /** Death → worker marked lost and the host's placements released. */
  detectionMs: Distribution;
  /** Released → placed on the survivor, its batch enqueued there. */
  handOffMs: Distribution;
  /** Placed → the survivor's claim of the batch (the queue hop; the claim marks the call `running`). */
  claimMs: Distribution;
  /** Claimed → `workspace_restored` committed: the rebuild of the copy from the checkpoint. */
  rebuildMs: Distribution;
  /** Restored → `tool_end`: the call itself. */
  callMs: Distribution;
  samples: FailoverSample[];
}

export interface HostsReport {
  date: string;
  commit: string;
  node: string;
  loadAverageAtStart: number;
  /** Share of the CPUs other processes used meanwhile (see other-load.ts); null off Linux. */
  otherLoadShare: number | null;
  elapsedMs: number;
  settings: Record<string, number | string>;
  throughput: ThroughputFigures;
  failover: FailoverFigures;
  goals: {
    twoHostsOverOne: { min: number; measured: number; met: boolean };
    threeHostsOverOne: { min: number; measured: number; met: boolean };
    failoverP50: { maxMs: number; measured: number; met: boolean };
    failoverP99: { maxMs: number; measured: number; met: boolean };
  };
}

export function failoverFigures(
  samples: FailoverSample[],
  project: Pick<FailoverFigures, "workspace" | "firstCheckpointTurnMs">,
): FailoverFigures {
  const of = (value: (sample: FailoverSample) => number) => roundDistribution(distribution(samples.map(value)));
  return {
    ...project,
    deathToCallMs: of((s) => s.callEndedMs),
    deathToRestoredMs: of((s) => s.restoredMs),
    detectionMs: of((s) => s.detectedMs),
    handOffMs: of((s) => s.placedMs - s.detectedMs),
    claimMs: of((s) => s.claimedMs - s.placedMs),
    rebuildMs: of((s) => s.restoredMs - s.claimedMs),
    callMs: of((s) => s.callEndedMs - s.restoredMs),
    samples,
  };
}

export function hostsGoalsOf(throughput: ThroughputFigures, failover: FailoverFigures): HostsReport["goals"] {
  const { twoHostsOverOne, threeHostsOverOne } = throughput.ratios;
  const { p50, p99 } = failover.deathToCallMs;
  const min = hostsGoals.moreHostsOverOneMin;
  const maxMs = hostsGoals.failoverMaxMs;
  return {
    twoHostsOverOne: { min, measured: twoHostsOverOne, met: twoHostsOverOne >= min },
    threeHostsOverOne: { min, measured: threeHostsOverOne, met: threeHostsOverOne >= min },
    failoverP50: { maxMs, measured: p50, met: p50 <= maxMs },
    failoverP99: { maxMs, measured: p99, met: p99 <= maxMs },
  };
}

export const ratioOf = (numerator: number, denominator: number): number => round(ratio(numerator, denominator));

const show = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits }) : "n/a";
const seconds = (ms: number) => `${show(ms / 1000, 2)} s`;
const verdict = (met: boolean) => (met ? "MET" : "NOT MET");

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows
    .map(
      (row) =>
        `  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join("   ")}`,
    )
    .join("\n");
}

export function printHostsReport(report: HostsReport, header: string[], targetMs: number): void {
  const { throughput: t, failover: f, goals } = report;
  const out = ["", "=== Foya hosts benchmark ===", ...header, ""];
  out.push(`1. steps/s with ${report.settings.concurrentRuns} runs at once (one project each), one worker process per host`);
  out.push(
    table([
      ["", "1 host", "2 hosts", "3 hosts"],
      ["steps/s", show(t.stepsPerSec64.oneHost), show(t.stepsPerSec64.twoHosts), show(t.stepsPerSec64.threeHosts)],
      ["against 1 host", "1×", `${show(t.ratios.twoHostsOverOne, 2)}×`, `${show(t.ratios.threeHostsOverOne, 2)}×`],
    ]),
  );
  out.push(`  slots in order: ${t.slots.map((slot) => `${slot.hosts}h ${show(slot.stepsPerSec)}`).join(", ")}`);
  out.push(
    `  within each half (1 2 3, then 3 2 1): 2 hosts ${t.halves.map((h) => `${show(h.twoHostsOverOne, 2)}×`).join(" / ")}, ` +
      `3 hosts ${t.halves.map((h) => `${show(h.threeHostsOverOne, 2)}×`).join(" / ")}`,
  );
  for (const [hosts, spreads] of Object.entries(t.placements))
    if (Number(hosts) > 1) out.push(`  projects per host, ${hosts} hosts, each window: ${spreads.join(", ")}`);

  const w = f.workspace;
  out.push("");
  out.push(
    `2. failover: ${show(w.files)} files, ${show(w.bytes / 1e6, 1)} MB (${show(w.smallestBytes / 1e3, 1)} KB to ${show(w.largestBytes / 1e6, 2)} MB), ` +
      `checkpointed whole (${show(w.checkpointEntries)} entries; that first checkpoint's turn took ${seconds(f.firstCheckpointTurnMs)})`,
  );
  out.push(
    `   the project's host SIGKILLed, a run of one \`read\` started at once; ${f.samples.length} times, from the kill, by Postgres timestamps`,
  );
  const row = (label: string, d: Distribution) => [label, seconds(d.p50), seconds(d.p99), seconds(d.mean), seconds(d.max)];
  out.push(
    table([
      ["", "p50", "p99", "mean", "max"],
      row("death → the moved batch's call ran (tool_end)", f.deathToCallMs),
      row("death → workspace rebuilt on the survivor", f.deathToRestoredMs),
      row("  detection: death → worker lost, placements released", f.detectionMs),
      row("  hand-off: released → placed on the survivor", f.handOffMs),
      row("  queue hop: placed → batch claimed (call marked running)", f.claimMs),
      row("  rebuild: claimed → workspace_restored (moved)", f.rebuildMs),
      row("  the call: restored → tool_end", f.callMs),
    ]),
  );
  out.push(
    `  each (death → call ran): ${f.samples.map((s) => `${s.victim}→${s.survivor} ${seconds(s.callEndedMs)} (detected ${seconds(s.detectedMs)}, last renewal ${seconds(s.lastRenewalMs)})`).join("; ")}`,
  );
  out.push("");
  out.push("goals:");
  out.push(
    table([
      [`2 hosts ≥ ${goals.twoHostsOverOne.min}× 1 host`, `${show(goals.twoHostsOverOne.measured, 2)}×`, verdict(goals.twoHostsOverOne.met)],
      [
        `3 hosts ≥ ${goals.threeHostsOverOne.min}× 1 host`,
        `${show(goals.threeHostsOverOne.measured, 2)}×`,
        verdict(goals.threeHostsOverOne.met),
      ],
      [`failover p50 ≤ ${seconds(goals.failoverP50.maxMs)}`, seconds(goals.failoverP50.measured), verdict(goals.failoverP50.met)],
      [`failover p99 ≤ ${seconds(goals.failoverP99.maxMs)}`, seconds(goals.failoverP99.measured), verdict(goals.failoverP99.met)],
    ]),
  );
  if (report.otherLoadShare !== null)
    out.push(`other work on the machine during the benchmark: about ${Math.round(report.otherLoadShare * 100)}% of its CPUs`);
  out.push(
    `took ${show(report.elapsedMs / 1000)} s${report.elapsedMs > targetMs ? ` (WARNING: over the ${targetMs / 1000} s target)` : ""}`,
  );
  console.log(out.join("\n"));
}
