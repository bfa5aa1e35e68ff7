import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startFoyaWorker } from "./bench-workers.js";
import type { BenchProcess } from "./processes.js";

/**
 * Worker hosts on this machine for a benchmark (SPEC W3): each host is one worker process with a
 * host id of its own (FOYA_HOST_ID) and a workspace root no other process shares
 * (FOYA_WORKSPACES_DIR), as in test/e2e/multi-host.test.ts. A host started again keeps its id and
 * its root, or gets an empty root in its place (a replaced machine). `removeAll` ends every
 * process and removes every root.
 */
export interface BenchHost {
  id: string;
  root: string;
  process: BenchProcess;
  /** Its worker's id, as the `workers` table and the leases name it. */
  workerId: string;
}

export interface BenchHosts {
  /** The hosts whose process runs. */
  readonly live: ReadonlyMap<string, BenchHost>;
  /** Starts the host's worker; `emptyRoot`: on an empty root, what its root held set aside. */
  start(hostId: string, options?: { emptyRoot?: boolean }): Promise<BenchHost>;
  /** Drains the host's worker (SIGTERM) and waits for it to exit. */
  stop(hostId: string): Promise<void>;
  /** SIGKILLs the host's only worker; answers the time of the signal (epoch ms) once the process is gone. */
  kill(hostId: string): Promise<number>;
  /** The worker output of every live host, for a failure's report. */
  processes(): BenchProcess[];
  removeAll(graceMs: number): Promise<void>;
}

export function createBenchHosts(env: Record<string, string>, log: (message: string) => void): BenchHosts {
  const roots = new Map<string, string>();
  const live = new Map<string, BenchHost>();

  /** Roots emptied by a restart, removed only at the end: a removal slows the disk's next writes (it is mounted with `discard`). */
  const setAside: string[] = [];
  const rootOf = async (hostId: string, empty: boolean): Promise<string> => {
    const known = roots.get(hostId);
    if (known && empty) {
      const aside = `${known}-gone-${setAside.length}`;
      await rename(known, aside);
      setAside.push(aside);
      await mkdir(known, { mode: 0o700 });
    }
    if (known) return known;
    const made = await mkdtemp(path.join(tmpdir(), `foya-bench-${hostId}-`));
    roots.set(hostId, made);
    return made;
  };

  return {
    live,
    async start(hostId, options = {}) {
      if (live.has(hostId)) throw new Error(`host ${hostId} already runs`);
      const root = await rootOf(hostId, options.emptyRoot === true);
      const child = await startFoyaWorker({ ...env, FOYA_HOST_ID: hostId, FOYA_WORKSPACES_DIR: root }, hostId);
      const workerId = /FOYA_WORKER_ID=(\S+)/.exec(child.output())?.[1];
      if (!workerId) throw new Error(`${hostId} printed no worker id`);
      const host = { id: hostId, root, process: child, workerId };
      live.set(hostId, host);
      log(`host ${hostId} started (pid ${child.pid})`);
      return host;
    },
    async stop(hostId) {
      const host = live.get(hostId);
      if (!host) return;
      await host.process.stop();
      live.delete(hostId);
      log(`host ${hostId} stopped`);
    },
    async kill(hostId) {
      const host = live.get(hostId);
      if (!host) throw new Error(`host ${hostId} does not run`);
      const at = Date.now();
      await host.process.stop(0);
      live.delete(hostId);
      return at;
    },
    processes: () => [...live.values()].map((host) => host.process),
    async removeAll(graceMs) {
      await Promise.allSettled([...live.values()].map((host) => host.process.stop(graceMs)));
      live.clear();
      await Promise.allSettled([...roots.values(), ...setAside].map((root) => rm(root, { recursive: true, force: true })));
    },
  };
}
