import { readFile, rename, rm, stat, writeFile } from "node:fs/promises";

/** How often a serving worker rewrites its heartbeat file. */
const heartbeatIntervalMs = 1000;
/** A heartbeat older than this means the worker is gone or its event loop is stuck. */
const heartbeatStaleMs = 10_000;

/**
 * A worker's heartbeat for container health checks (workers have no HTTP port): once the
 * worker serves, it rewrites `file` every second with its pid and the time. A fresh file
 * whose pid is alive says the process finished start-up and its event loop still turns. It
 * says nothing about Postgres or Redis on purpose: a worker rides out their outages and
 * resumes by itself (SPEC D9); the API's `/readyz` reports them.
 */
export function startHeartbeatFile(file: string, onError: (error: unknown) => void): { stop(): Promise<void> } {
  const temporary = `${file}.${process.pid}.tmp`;
  let failing = false;
  const beat = async () => {
    try {
      // Written aside, then renamed: a reader never sees half a file.
      await writeFile(temporary, `${process.pid} ${new Date().toISOString()}\n`);
      await rename(temporary, file);
      failing = false;
    } catch (error) {
      if (!failing) onError(error);
      failing = true;
    }
  };
  let latest = beat();
  let queued = false;
  const timer = setInterval(() => {
    // One write at a time; a slow disk skips beats rather than piling them up.
    if (queued) return;
    queued = true;
    latest = latest.then(beat).finally(() => {
      queued = false;
    });
  }, heartbeatIntervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await latest;
      await rm(file, { force: true });
    },
  };
}

/** Why the heartbeat in `file` is not healthy, or undefined when it is. */
export async function heartbeatProblem(file: string, now = Date.now()): Promise<string | undefined> {
  let modified: number;
  let text: string;
  try {
    modified = (await stat(file)).mtimeMs;
    text = await readFile(file, "utf8");
  } catch {
    return `no heartbeat file ${file}`;
  }
  const age = now - modified;
  if (age > heartbeatStaleMs) return `heartbeat is ${Math.round(age)} ms old`;
  const pid = Number(text.split(" ")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return "heartbeat file holds no pid";
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return `worker process ${pid} is not running`;
  }
  return undefined;
}
