import { readdir, readFile } from "node:fs/promises";

/** A number unlikely to appear in any other process's command line: `sleep <marker>` lets a test find its own strays. */
export const uniqueMarker = (): string => `7${Math.floor(100_000_000 + Math.random() * 899_999_999)}`;

/** Host pids whose command line contains `marker` and that are running (not zombies waiting to be reaped). */
export async function livingWith(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8");
      if (!cmdline.includes(marker)) continue;
      if (!/^State:\s+Z/m.test(await readFile(`/proc/${entry}/status`, "utf8"))) found.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return found;
}

/** Waits up to `ms` for every process carrying `marker` to be gone; answers the ones still there. */
export async function survivorsAfter(marker: string, ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const living = await livingWith(marker);
    if (living.length === 0 || Date.now() > deadline) return living;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Kills what a failed test may have left behind, so lingering processes never load the machine. */
export async function killAll(markers: Iterable<string>): Promise<void> {
  for (const marker of markers) {
    for (const pid of await livingWith(marker)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
}

/**
 * Running slirp4netns processes this test process started (its children, and
 * theirs): the network of network-granted sandboxes. None may outlive a call.
 */
export async function livingSlirp4netns(): Promise<number[]> {
  const processes: Array<{ pid: number; ppid: number; name: string; state: string }> = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split at the last ")".
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const [state, ppid] = stat.slice(close + 2).split(" ");
      processes.push({ pid: Number(entry), ppid: Number(ppid), name: stat.slice(stat.indexOf("(") + 1, close), state: state! });
    } catch {
      // ended while we looked
    }
  }
  const ours = new Set([process.pid]);
  const found: number[] = [];
  // slirp4netns forks once (the child that enters the namespace): two levels.
  for (let level = 0; level < 2; level++) {
    for (const p of processes) {
      if (p.name === "slirp4netns" && p.state !== "Z" && ours.has(p.ppid) && !ours.has(p.pid)) {
        ours.add(p.pid);
        found.push(p.pid);
      }
    }
  }
  return found;
}

/** Waits up to `ms` for every slirp4netns of this process to be gone (a killed one takes 15-30 ms to exit); answers those still there. */
export async function slirp4netnsLeftAfter(ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const living = await livingSlirp4netns();
    if (living.length === 0 || Date.now() > deadline) return living;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
