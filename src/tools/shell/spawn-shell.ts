import type { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { execa } from "execa";
import { sandboxUnavailableMessage, type SandboxRunner } from "../../sandbox/sandbox-runner.js";
import { readSandboxStatus, signalOfExitStatus } from "../../sandbox/sandbox-status.js";
import type { SandboxGrant } from "../tool.js";
import { BoundedOutput } from "./bounded-output.js";

/** How a tool process ended. */
export type ShellEnd =
  | { kind: "exited"; exitCode: number }
  | { kind: "signaled"; signal: string }
  /** The sandbox could not be set up; the command did not run. `message` says why and how to fix it. */
  | { kind: "sandbox_failed"; message: string };

export interface ShellProcess {
  /** Settles (never rejects) once the process has ended and its output is read. */
  ended: Promise<ShellEnd>;
  /** stdout and stderr together, bounded (SPEC O1). */
  output: BoundedOutput;
  /** Called after each chunk of output. */
  onOutput(listener: () => void): void;
  /** Kills the command and everything it started; safe to call any number of times. */
  killGroup(): void;
}

export interface PreparedShell {
  start(): ShellProcess;
}

export interface ShellOptions {
  command: string;
  /** The workspace: the working directory, and the only writable place when sandboxed. */
  cwd: string;
  /** PATH of the process. */
  path: string;
  headBytes: number;
  tailBytes: number;
  /** The call's confinement; null (Full Access only) runs the command unconfined. */
  sandbox: SandboxGrant | null;
  /** Builds the confinement; without one, a sandboxed call fails closed. */
  runner: SandboxRunner | undefined;
}

/**
 * Prepares `bash -c command` the way every tool process starts: in its own
 * process group, with only PATH, HOME (the workspace) and terminal settings
 * in its environment, never the service's secrets, and output kept bounded
 * while it streams. With a sandbox grant it runs under bubblewrap (SPEC S3);
 * if the sandbox cannot be planned this answers why, and nothing starts.
 * Preparing is separate from starting so a caller can record the command
 * first (background commands) and still refuse before anything ran.
 */
export async function prepareShell(options: ShellOptions): Promise<PreparedShell | { unavailable: string }> {
  const env: Record<string, string> = { PATH: options.path, HOME: options.cwd, TERM: "dumb", PAGER: "cat", GIT_PAGER: "cat", LANG: "C.UTF-8" };
  if (options.sandbox === null) return { start: () => startProcess({ file: "bash", args: ["-c", options.command], cwd: options.cwd, env, options }) };
  if (!options.runner) return { unavailable: sandboxUnavailableMessage("this worker was built without a sandbox runner") };
  const plan = await options.runner.plan({ command: options.command, workspaceDir: options.cwd, network: options.sandbox.network });
  if (!plan.ok) return { unavailable: plan.message };
  // bwrap gets the same small environment, so even its own /proc/1/environ inside shows nothing of the service.
  return { start: () => startProcess({ file: plan.file, args: plan.args, cwd: options.cwd, env, options, statusFd: plan.statusFd }) };
}

function startProcess(spec: { file: string; args: string[]; cwd: string; env: Record<string, string>; options: ShellOptions; statusFd?: number }): ShellProcess {
  const sandboxed = spec.statusFd !== undefined;
  // bwrap's status fd is fd 3: the only extra pipe.
  const child = execa(spec.file, spec.args, {
    extendEnv: false,
    detached: true,
    stdio: sandboxed ? ["ignore", "pipe", "pipe", "pipe"] : ["ignore", "pipe", "pipe"],
    buffer: false,
    reject: false,
    all: true,
    cwd: spec.cwd,
    env: spec.env,
  });
  const output = new BoundedOutput(spec.options.headBytes, spec.options.tailBytes);
  child.all.on("data", (chunk: Buffer) => output.write(chunk));

  let status = "";
  const statusStream = sandboxed ? (child.stdio[3] as Readable) : undefined;
  statusStream?.on("data", (chunk: Buffer) => (status += chunk.toString("utf8")));
  const statusRead = statusStream ? finished(statusStream).catch(() => {}) : Promise.resolve();

  let exited = false;
  let stopped = false;
  // Sandboxed, the group is bwrap: killing it kills the sandbox's init
  // (--die-with-parent), and the kernel then kills its whole PID namespace.
  const signalGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // the group is already gone
    }
  };
  child.on("exit", () => {
    exited = true;
    // What the command left running dies with it (this also closes pipes a stray child still holds).
    signalGroup();
  });

  const ended = Promise.all([child, statusRead]).then(([result]): ShellEnd => {
    if (!sandboxed) return result.signal ? { kind: "signaled", signal: result.signal } : { kind: "exited", exitCode: result.exitCode ?? 1 };
    const reported = readSandboxStatus(status);
    if (reported.exitCode !== undefined) {
      const signal = signalOfExitStatus(reported.exitCode);
      return signal ? { kind: "signaled", signal } : { kind: "exited", exitCode: reported.exitCode };
    }
    if (stopped || result.signal) return { kind: "signaled", signal: result.signal ?? "SIGKILL" };
    const detail = (output.render().trim() || result.shortMessage || "no message").slice(-1000);
    return {
      kind: "sandbox_failed",
      message: sandboxUnavailableMessage(reported.started ? `bash could not be started inside the sandbox (${detail})` : `bubblewrap could not set up the sandbox (${detail})`),
    };
  });

  return {
    ended,
    output,
    onOutput: (listener) => void child.all.on("data", listener),
    killGroup() {
      if (!exited) stopped = true;
      signalGroup();
    },
  };
}
