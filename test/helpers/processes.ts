import { execa, type ResultPromise } from "execa";
import { inject } from "vitest";
import { builtEntry, envForBuild, type BundledEntry } from "./entry-build.js";
import { repoRoot } from "./test-env.js";

/**
 * A real Foya process (API or worker), as `npm run api` / `npm run worker` would start it, from
 * the run's compiled entries (test/helpers/entry-build.ts) rather than through tsx.
 */
export interface FoyaProcess {
  readonly pid: number;
  /** The API's URL, for API processes. */
  readonly url: string | undefined;
  output(): string;
  /** Waits until the output matches `pattern` (rejects if the process ends first or at the deadline). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  kill(signal: NodeJS.Signals): void;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | undefined; signal: string | undefined }>;
}

export interface StartOptions {
  /** How long to wait for the `until` line (30 s); a process that waits for its dependencies may need longer. */
  timeoutMs?: number;
  /**
   * What to wait for before answering: "serving" (default) the API's FOYA_API_URL or the worker's
   * FOYA_WORKER_ID line; "listening" an API's FOYA_API_LISTENING line (its port is open, start-up
   * may still wait for Postgres or Redis); "spawned" nothing.
   */
  until?: "serving" | "listening" | "spawned";
  /** Another uid and gid to run as (through `setpriv`, no supplementary groups), from a root test run. */
  runAs?: ProcessOwner;
}

export interface ProcessOwner {
  uid: number;
  gid: number;
}

const servingMarker = { api: /FOYA_API_URL=(\S+)/, worker: /FOYA_WORKER_ID=(\S+)/ };
const listeningMarker = /FOYA_API_LISTENING=(\S+)/;

/** An entry of this repository run as its own process, its output collected. */
export interface SpawnedProcess {
  readonly pid: number;
  output(): string;
  /** Waits until the output matches `pattern` (rejects if the process ends first or at the deadline). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  kill(signal: NodeJS.Signals): void;
  exited: Promise<{ code: number | undefined; signal: string | undefined }>;
}

/**
 * The node arguments that run `entry` (relative to the repository) from this run's compiled
 * entries, built once by the global setup: the same code as `node --import tsx <entry>`, started
 * in less than half the CPU.
 */
export function entryArgs(entry: BundledEntry): string[] {
  return [builtEntry(inject("entryBuild"), entry)];
}

/** `env` for a compiled entry: the tool modules it names are taken from the build too. */
function entryEnv(env: Record<string, string>): Record<string, string> {
  return envForBuild(inject("entryBuild"), repoRoot, env);
}

/** Starts `entry` (relative to the repository) from the compiled entries, with `env` on top of this process's. */
export function spawnEntryProcess(entry: BundledEntry, env: Record<string, string>, label: string, runAs?: ProcessOwner): SpawnedProcess {
  return spawnNodeProcess(entryArgs(entry), entryEnv(env), label, runAs);
}

/** Starts `node <args>` in the repository, with `env` on top of this process's (as `runAs`, when given). */
export function spawnNodeProcess(
  args: readonly string[],
  env: Record<string, string>,
  label: string,
  runAs?: ProcessOwner,
): SpawnedProcess {
  // setpriv execs node: the child's pid is node's.
  const [command, commandArgs] = runAs
    ? ["setpriv", [`--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, "--clear-groups", process.execPath, ...args]]
    : [process.execPath, args];
  const child: ResultPromise = execa(command, commandArgs, {
    cwd: repoRoot,
    env: { ...env, PORT: "0" },
    extendEnv: true,
    reject: false,
    all: true,
    buffer: false,
  });
  let output = "";
  child.all?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = child.then((result) => ({ code: result.exitCode, signal: result.signal }));
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  const waitForOutput = async (pattern: RegExp, waitMs = 30_000): Promise<RegExpExecArray> => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const match = pattern.exec(output);
      if (match) return match;
      if (ended) throw new Error(`${label} process ended before printing ${pattern}:\n${output}`);
      if (Date.now() > deadline) throw new Error(`${label} process did not print ${pattern} within ${waitMs} ms:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return { pid: child.pid as number, output: () => output, waitForOutput, kill: (signal) => void child.kill(signal), exited };
}

export async function startFoyaProcess(
  role: "api" | "worker",
  env: Record<string, string>,
  options: number | StartOptions = {},
): Promise<FoyaProcess> {
  const { timeoutMs = 30_000, until = "serving", runAs } = typeof options === "number" ? { timeoutMs: options } : options;
  const spawned = spawnEntryProcess(role === "api" ? "src/api/main.ts" : "src/worker/main.ts", env, role, runAs);
  const started: FoyaProcess = {
    ...spawned,
    get url() {
      const output = spawned.output();
      return role === "api" ? (servingMarker.api.exec(output) ?? listeningMarker.exec(output))?.[1] : undefined;
    },
  };
  if (until === "spawned") return started;
  try {
    await spawned.waitForOutput(until === "listening" && role === "api" ? listeningMarker : servingMarker[role], timeoutMs);
  } catch (error) {
    spawned.kill("SIGKILL");
    throw new Error(`${role} process did not start: ${(error as Error).message}`);
  }
  return started;
}

/** The Foya processes a test file starts: each started with the given environment, all killed at the end (`killAll`). */
export interface ProcessGroup {
  start(role: "api" | "worker", env: Record<string, string>, options?: StartOptions): Promise<FoyaProcess>;
  /** SIGKILLs every process started so far and waits for them to end. */
  killAll(): Promise<void>;
}

export function processGroup(): ProcessGroup {
  const started: FoyaProcess[] = [];
  return {
    async start(role, env, options) {
      const child = await startFoyaProcess(role, env, options);
      started.push(child);
      return child;
    },
    async killAll() {
      for (const child of started.splice(0)) {
        child.kill("SIGKILL");
        await child.exited;
      }
    },
  };
}
