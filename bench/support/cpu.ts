import { readdir, readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";

/**
 * Machine CPU use over a phase, from /proc (Linux only; elsewhere the figures
 * are absent). Shows whether a phase was CPU-bound and who used the CPU:
 * Postgres and Redis server processes are grouped by command name. These are
 * server-wide, so anything else using the same servers is included.
 */
export interface CpuSnapshot {
  at: number;
  busyTicks: number;
  totalTicks: number;
  byCommand: Map<string, number>;
}

export interface CpuUsage {
  /** Length of the measured window, s. */
  seconds: number;
  cores: number;
  /** Machine-wide busy share, 0..1. */
  machineBusy: number;
  /** Cores' worth of CPU used by each watched server, e.g. { postgres: 0.8 }. */
  serverCores: Record<string, number>;
}

const ticksPerSecond = 100; // USER_HZ; 100 on every mainstream Linux build.
const watched = ["postgres", "redis-server"];

export async function cpuSnapshot(): Promise<CpuSnapshot | undefined> {
  try {
    const stat = await readFile("/proc/stat", "utf8");
    const fields = (stat.split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, value) => sum + value, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    const byCommand = new Map<string, number>();
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const text = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
      const open = text.indexOf("(");
      const close = text.lastIndexOf(")");
      if (open < 0 || close < 0) continue;
      const command = text.slice(open + 1, close);
      if (!watched.includes(command)) continue;
      // After ") ": state(3) ppid(4) ... utime(14) stime(15); index 0 here is field 3.
      const rest = text.slice(close + 2).split(" ");
      const ticks = Number(rest[11]) + Number(rest[12]);
      byCommand.set(command, (byCommand.get(command) ?? 0) + ticks);
    }
    return { at: performance.now(), busyTicks: total - idle, totalTicks: total, byCommand };
  } catch {
    return undefined;
  }
}

export function cpuBetween(before: CpuSnapshot | undefined, after: CpuSnapshot | undefined): CpuUsage | undefined {
  if (!before || !after) return undefined;
  const seconds = (after.at - before.at) / 1000;
  const serverCores: Record<string, number> = {};
  for (const command of watched) {
    const used = (after.byCommand.get(command) ?? 0) - (before.byCommand.get(command) ?? 0);
    serverCores[command] = seconds > 0 ? Math.max(0, used) / ticksPerSecond / seconds : 0;
  }
  const total = after.totalTicks - before.totalTicks;
  return {
    seconds,
    cores: availableParallelism(),
    machineBusy: total > 0 ? (after.busyTicks - before.busyTicks) / total : 0,
    serverCores,
  };
}
