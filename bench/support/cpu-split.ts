import { readFile } from "node:fs/promises";
import { cpuBetween, cpuSnapshot } from "./cpu.js";

/**
 * Who spent the machine's CPU over a measured window (Linux /proc), in CPU milliseconds: the
 * machine as a whole, the Postgres and Redis servers (server-wide), the given worker processes,
 * this benchmark process (the in-process API and the event observers), and everything else (the
 * kernel's own threads, other work on the machine). Divided by the window's steps, it is the
 * CPU one step costs, and the split shows where a reduction must come from.
 */
export interface CpuTotals {
  machineMs: number;
  postgresMs: number;
  redisMs: number;
  workersMs: number;
  benchMs: number;
}

const ticksPerSecond = 100;

async function pidTicks(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const close = text.lastIndexOf(")");
  if (close < 0) return 0;
  const rest = text.slice(close + 2).split(" ");
  // utime, stime, and the children's (a worker's sandbox helpers are its children).
  return Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
}

/** Runs `work` and answers what it returned with the CPU the window took; totals are absent off Linux. */
export async function measureCpu<T>(
  workerPids: readonly number[],
  work: () => Promise<T>,
): Promise<{ value: T; cpu: CpuTotals | undefined }> {
  const workersBefore = await Promise.all(workerPids.map(pidTicks));
  const benchBefore = process.cpuUsage();
  const before = await cpuSnapshot();
  const value = await work();
  const after = await cpuSnapshot();
  const bench = process.cpuUsage(benchBefore);
  const workersAfter = await Promise.all(workerPids.map(pidTicks));
  const usage = cpuBetween(before, after);
  if (!usage) return { value, cpu: undefined };
  const coresToMs = (cores: number) => cores * usage.seconds * 1000;
  const workerTicks = workersAfter.reduce((sum, ticks, i) => sum + Math.max(0, ticks - (workersBefore[i] ?? 0)), 0);
  return {
    value,
    cpu: {
      machineMs: coresToMs(usage.machineBusy * usage.cores),
      postgresMs: coresToMs(usage.serverCores.postgres ?? 0),
      redisMs: coresToMs(usage.serverCores["redis-server"] ?? 0),
      workersMs: (workerTicks / ticksPerSecond) * 1000,
      benchMs: (bench.user + bench.system) / 1000,
    },
  };
}

/** The windows' CPU per step, with the rest (machine less the named parts); undefined when no window was measured. */
export function cpuPerStep(
  windows: ReadonlyArray<{ steps: number; cpu?: CpuTotals | undefined }>,
): (CpuTotals & { otherMs: number }) | undefined {
  const measured = windows.filter((window) => window.cpu !== undefined);
  const steps = measured.reduce((sum, window) => sum + window.steps, 0);
  if (steps === 0) return undefined;
  const sum = (key: keyof CpuTotals) => measured.reduce((total, window) => total + (window.cpu?.[key] ?? 0), 0) / steps;
  const split = {
    machineMs: sum("machineMs"),
    postgresMs: sum("postgresMs"),
    redisMs: sum("redisMs"),
    workersMs: sum("workersMs"),
    benchMs: sum("benchMs"),
  };
  return { ...split, otherMs: Math.max(0, split.machineMs - split.postgresMs - split.redisMs - split.workersMs - split.benchMs) };
}
