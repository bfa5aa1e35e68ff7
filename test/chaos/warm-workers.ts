import path from "node:path";
import { execa } from "execa";
import { repoRoot } from "../helpers/test-env.js";

/**
 * A worker process started through warm-worker-main.ts: it loads its code first (`warm`),
 * then runs `src/worker/main.ts` as `npm run worker` does once told to (`serve`).
 */
export interface WorkerProcess {
  readonly pid: number;
  /** Resolves once its code is loaded; rejects if it ends first or takes longer than the warm-up limit. */
  readonly warm: Promise<void>;
  /** Lets it run `src/worker/main.ts`; resolves with its worker id once it takes jobs (FOYA_WORKER_ID). */
  serve(timeoutMs?: number): Promise<string>;
  output(): string;
  kill(signal: NodeJS.Signals): void;
  readonly exited: Promise<{ code: number | undefined; signal: string | undefined }>;
}

const entry = path.join(repoRoot, "test/chaos/warm-worker-main.ts");

export function spawnWorker(env: Record<string, string>, warmTimeoutMs = 60_000): WorkerProcess {
  const child = execa(process.execPath, ["--import", "tsx", entry], {
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
  let ended = false;
  const exited = child.then((result) => {
    ended = true;
    return { code: result.exitCode, signal: result.signal };
  });
  const waitFor = async (pattern: RegExp, waitMs: number): Promise<RegExpExecArray> => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const match = pattern.exec(output);
      if (match) return match;
      if (ended || Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`worker ${child.pid} did not print ${pattern}${ended ? " (it ended)" : ` within ${waitMs} ms`}:\n${output.slice(-2000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const warm = waitFor(/FOYA_WORKER_WARM/, warmTimeoutMs).then(() => undefined);
  warm.catch(() => {});
  return {
    pid: child.pid as number,
    warm,
    async serve(waitMs = 30_000) {
      await warm;
      child.kill("SIGUSR2");
      return (await waitFor(/FOYA_WORKER_ID=(\S+)/, waitMs))[1]!;
    },
    output: () => output,
    kill: (signal) => void child.kill(signal),
    exited,
  };
}
