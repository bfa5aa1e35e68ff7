import { readdir, readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";

/**
 * How much of the machine's CPU went to work other than the benchmark's over a window:
 * everything busy, minus this process and its children (workers, peers; counted once they
 * have exited and been reaped), minus the Postgres and Redis servers (which the benchmark
 * uses, though others may use them too, so the figure is a floor). On a shared 2-core box
 * a test run or a type check next to the benchmark moves every absolute figure; this says
 * when that happened. Linux only; elsewhere `finish` answers undefined.
 */
export interface OtherLoadWatch {
  /** Share of all CPUs (0..1) used by other processes since the watch started; call after the children exited. */
  finish(): Promise<number | undefined>;
}

const ticksPerSecond = 100; // USER_HZ
const servers = ["postgres", "redis-server"];

interface Snapshot {
  at: number;
  machineBusyTicks: number;
  /** This process and its reaped children. */
  ownTicks: number;
  /** Server processes, with their reaped children: backends that exited count in the postmaster's. */
  serverTicks: number;
}

/** utime + stime + cutime + cstime of a /proc/<pid>/stat line, and its command name. */
function processTicks(stat: string): { command: string; ticks: number } {
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  // After ") ": index 0 is field 3 (state); utime, stime, cutime, cstime are fields 14 to 17.
  const fields = stat
    .slice(close + 2)
    .split(" ")
    .slice(11, 15)
    .map(Number);
  return { command: stat.slice(open + 1, close), ticks: fields.reduce((sum, ticks) => sum + ticks, 0) };
}

async function snapshot(): Promise<Snapshot | undefined> {
  try {
    const cpu = ((await readFile("/proc/stat", "utf8")).split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
    const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
    let serverTicks = 0;
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
      if (!stat) continue;
      const { command, ticks } = processTicks(stat);
      if (servers.includes(command)) serverTicks += ticks;
    }
    const own = processTicks(await readFile("/proc/self/stat", "utf8")).ticks;
    return { at: performance.now(), machineBusyTicks: cpu.reduce((sum, ticks) => sum + ticks, 0) - idle, ownTicks: own, serverTicks };
  } catch {
    return undefined;
  }
}

export async function watchOtherLoad(): Promise<OtherLoadWatch> {
  const before = await snapshot();
  return {
    async finish() {
      const after = await snapshot();
      if (!before || !after || after.at <= before.at) return undefined;
      const capacityTicks = (availableParallelism() * (after.at - before.at) * ticksPerSecond) / 1000;
      const others =
        after.machineBusyTicks - before.machineBusyTicks - (after.ownTicks - before.ownTicks) - (after.serverTicks - before.serverTicks);
      return Math.min(1, Math.max(0, others / capacityTicks));
    },
  };
}
