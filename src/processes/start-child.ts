import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";

/**
 * Starts a process with its `error` listener attached before anything can
 * emit. When a spawn fails for want of descriptors (EMFILE, ENFILE) or
 * processes (EAGAIN), node hands back a child without pid or stdio and reports
 * the failure as an `error` event on the next tick; execa 9 reads the missing
 * stdio first and throws, so nobody hears that event, and an unheard `error`
 * ends the whole worker, interrupting every tenant's calls on it. Here the
 * failure is a value: `closed` answers `not_started` with the reason.
 */
export interface StartedChild {
  /** The process (its `pid` is undefined when it did not start); null when the arguments were refused outright. */
  child: ChildProcess | null;
  /** The process's stdio streams, indexed by descriptor; null when it did not start. */
  stdio: ChildProcess["stdio"] | null;
  /** Settles (never rejects) once the process exited and its stdio closed, or it could not start. */
  closed: Promise<ChildEnd>;
}

export type ChildEnd = { kind: "closed"; exitCode: number | null; signal: NodeJS.Signals | null } | { kind: "not_started"; error: Error };

export function startChild(file: string, args: readonly string[], options: SpawnOptions): StartedChild {
  let child: ChildProcess;
  try {
    child = spawn(file, args, options);
  } catch (error) {
    // Invalid arguments throw at once (a NUL in an argument, say): as good as not started.
    return { child: null, stdio: null, closed: Promise.resolve({ kind: "not_started", error: error as Error }) };
  }
  let startError: Error | undefined;
  const closed = new Promise<ChildEnd>((resolve) => {
    // Kept for the child's whole life: a failed kill reports `error` too, and must not end the worker either.
    child.on("error", (error) => {
      startError ??= error;
      if (child.pid === undefined) resolve({ kind: "not_started", error });
    });
    child.once("close", (exitCode, signal) => {
      if (child.pid === undefined) resolve({ kind: "not_started", error: startError ?? new Error(`${file} could not be started`) });
      else resolve({ kind: "closed", exitCode, signal });
    });
  });
  return { child, stdio: Array.isArray(child.stdio) ? child.stdio : null, closed };
}

/** Runs a short program to its end; answers its status and output, or why it could not start. Never rejects. */
export async function runChild(
  file: string,
  args: readonly string[],
  options: Omit<SpawnOptions, "stdio">,
): Promise<{ end: ChildEnd; stdout: string; stderr: string }> {
  const started = startChild(file, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  started.child?.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  started.child?.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  return { end: await started.closed, stdout, stderr };
}
