import path from "node:path";
import { pathToFileURL } from "node:url";
import { execa } from "execa";
import type { ProbeStats } from "./probe-types.js";

/**
 * Worker processes for the benchmark, started the way `npm run worker` would
 * (`node --import tsx <entry>`), plus the probe preload so they can report
 * their Postgres/Redis/CPU counters over IPC.
 */
export interface BenchProcess {
  readonly pid: number;
  readonly label: string;
  output(): string;
  /** Starts a measurement window in the process. */
  resetProbe(): Promise<void>;
  /** The counters since the last reset. */
  readProbe(): Promise<ProbeStats>;
  /** SIGTERM, then SIGKILL after `graceMs` (0: SIGKILL at once); resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** After a failed benchmark: the end of each worker's output, where the reason usually is. */
export function printOutputTails(children: Iterable<BenchProcess>): void {
  for (const child of children) {
    const output = child.output().trim();
    if (output) console.error(`--- ${child.label} output (tail) ---\n${output.slice(-4000)}`);
  }
}

/** Runs a benchmark's main and exits with its outcome (open handles would keep the process alive). */
export function runBenchmark(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}

/**
 * Ctrl-C or SIGTERM runs the benchmark's cleanup (its workers, database, queues), then exits 130.
 * `on`, not `once`: execa's exit hook (signal-exit) re-raises a signal no other listener handles,
 * which would kill this process before the cleanup has finished.
 */
export function cleanUpOnSignal(cleanup: () => Promise<unknown>): void {
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: cleaning up...`);
    void cleanup().finally(() => process.exit(130));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

export const benchRoot = path.dirname(path.dirname(new URL(import.meta.url).pathname));
export const repoRoot = path.dirname(benchRoot);
const probeUrl = pathToFileURL(path.join(benchRoot, "support/process-probe.ts")).href;

interface ProbeMessage {
  type: string;
  stats?: ProbeStats;
}

const isProbeMessage = (message: unknown): message is ProbeMessage =>
  typeof message === "object" && message !== null && typeof (message as { type?: unknown }).type === "string";

/**
 * Spawns `entry` (relative to the repo root) and waits until its output matches
 * `readyMarker`. The child inherits the parent's environment, overridden by `env`.
 */
export async function startBenchProcess(options: {
  label: string;
  entry: string;
  env: Record<string, string>;
  readyMarker: RegExp;
  timeoutMs?: number;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs?: readonly string[];
}): Promise<BenchProcess> {
  const args = [...(options.nodeArgs ?? []), "--import", "tsx", "--import", probeUrl, path.join(repoRoot, options.entry)];
  const child = execa(process.execPath, args, {
    cwd: repoRoot,
    env: options.env,
    extendEnv: true,
    reject: false,
    all: true,
    buffer: false,
    ipc: true,
    serialization: "json",
  });
  let output = "";
  child.all?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    // Keep memory bounded if a worker logs a lot.
    if (output.length > 200_000) output = output.slice(-100_000);
  });
  let ended = false;
  const exited = child.then(() => {
    ended = true;
  });

  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (!options.readyMarker.test(output)) {
    if (ended || Date.now() > deadline) {
      child.kill("SIGKILL");
      await exited;
      throw new Error(`${options.label} did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  async function request(message: string, reply: string): Promise<ProbeMessage> {
    const answer = child.getOneMessage({ filter: (m) => isProbeMessage(m) && m.type === reply });
    await child.sendMessage(message);
    const received = await answer;
    if (!isProbeMessage(received)) throw new Error(`${options.label}: unexpected probe answer`);
    return received;
  }

  return {
    pid: child.pid as number,
    label: options.label,
    output: () => output,
    async resetProbe() {
      await request("probe:reset", "probe:reset-done");
    },
    async readProbe() {
      const answer = await request("probe:read", "probe:stats");
      if (!answer.stats) throw new Error(`${options.label}: probe answered no stats`);
      return answer.stats;
    },
    async stop(graceMs = 10_000) {
      if (ended) return;
      if (graceMs <= 0) {
        child.kill("SIGKILL");
        await exited;
        return;
      }
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
