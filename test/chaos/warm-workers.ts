import { spawnEntryProcess } from "../helpers/processes.js";

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

export function spawnWorker(env: Record<string, string>, warmTimeoutMs = 60_000): WorkerProcess {
  const child = spawnEntryProcess("test/chaos/warm-worker-main.ts", env, "warm worker");
  const waitFor = (pattern: RegExp, waitMs: number): Promise<RegExpExecArray> =>
    child.waitForOutput(pattern, waitMs).catch((error: unknown) => {
      child.kill("SIGKILL");
      throw error;
    });
  const warm = waitFor(/FOYA_WORKER_WARM/, warmTimeoutMs).then(() => undefined);
  warm.catch(() => {});
  return {
    pid: child.pid,
    warm,
    async serve(waitMs = 30_000) {
      await warm;
      child.kill("SIGUSR2");
      return (await waitFor(/FOYA_WORKER_ID=(\S+)/, waitMs))[1]!;
    },
    output: child.output,
    kill: child.kill,
    exited: child.exited,
  };
}
