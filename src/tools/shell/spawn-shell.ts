import { execa, type ResultPromise } from "execa";
import { BoundedOutput } from "./bounded-output.js";

const shellOptions = {
  extendEnv: false,
  detached: true,
  stdin: "ignore",
  buffer: false,
  reject: false,
  all: true,
} as const;

export interface ShellProcess {
  child: ResultPromise<typeof shellOptions & { cwd: string; env: Record<string, string> }>;
  /** stdout and stderr together, bounded (SPEC O1). */
  output: BoundedOutput;
  /** Kills the command and everything it started; safe to call any number of times. */
  killGroup(): void;
}

/**
 * Starts `bash -c command` the way every tool process starts: in its own
 * process group, with only PATH, HOME (the workspace) and terminal settings in
 * its environment, never the service's secrets, and output kept bounded while
 * it streams. When the command itself exits, whatever it left running is
 * killed too, which also closes pipes a stray child still holds.
 */
export function spawnShell(options: { command: string; cwd: string; path: string; headBytes: number; tailBytes: number }): ShellProcess {
  const env: Record<string, string> = { PATH: options.path, HOME: options.cwd, TERM: "dumb", PAGER: "cat", GIT_PAGER: "cat", LANG: "C.UTF-8" };
  const child = execa("bash", ["-c", options.command], { ...shellOptions, cwd: options.cwd, env });
  const output = new BoundedOutput(options.headBytes, options.tailBytes);
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // the group is already gone
    }
  };
  child.all.on("data", (chunk: Buffer) => output.write(chunk));
  child.on("exit", killGroup);
  return { child, output, killGroup };
}
