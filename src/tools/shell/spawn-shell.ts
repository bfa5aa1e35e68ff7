import type { Readable, Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { startChild } from "../../processes/start-child.js";
import { connectNetwork, type NetworkLink } from "../../sandbox/sandbox-network.js";
import type { Confinement } from "../../sandbox/confinement.js";
import type { ProcessLimits } from "../../core/process-limits.js";
import {
  sandboxNetworkUnavailableMessage,
  sandboxUnavailableMessage,
  type SandboxInvocation,
  type SandboxRunner,
} from "../../sandbox/sandbox-runner.js";
import { readSandboxStart, readSandboxStatus, signalOfExitStatus } from "../../sandbox/sandbox-status.js";
import { feedSandbox, passGate, sandboxPipes } from "../../sandbox/sandbox-start.js";
import type { OverlayFolders } from "../../sandbox/overlay/overlay-mount.js";
import { BoundedOutput } from "./bounded-output.js";
import type { FileChangeRecord } from "../../core/file-change-record.js";
import type { ProcessIdentity } from "../../core/process-identity.js";

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
  /** For a command that will never start: gives back what was set aside for it (its temporary space, its layer). */
  discard(): void;
  /**
   * Set when the command runs on a layer over the workspace (SPEC X7): its
   * writes reach the workspace only when this settles them, after it ended.
   */
  layer?: PreparedLayer;
  /**
   * Set for a background command (SPEC X7): it works on the workspace itself,
   * so what it changed is summarized from manifests taken before and after.
   */
  changeSummary?: { finish(): Promise<string | null> };
}

export interface PreparedLayer {
  /** Records what the command changed and applies it to the workspace; keeps the layer for roll-forward if that fails. */
  settle(blobs: { put(content: Buffer): Promise<string> }): Promise<{
    records: FileChangeRecord[];
    note: string | null;
    /** The workspace paths the apply may have changed (a folder with what is under it); null when not known path by path. */
    changedPaths: string[] | null;
  }>;
  /** For a command that never started: drops the empty layer. */
  discard(): void;
}

export interface ShellOptions {
  command: string;
  /** The workspace: the working directory, and the only writable place when sandboxed. */
  cwd: string;
  /** PATH of the process. */
  path: string;
  headBytes: number;
  tailBytes: number;
  confinement: Confinement;
  /** The tenant's host identity: never root (SPEC S7). */
  identity: ProcessIdentity;
  limits: ProcessLimits;
  /** Builds the confinement; without one, every call fails closed. */
  runner: SandboxRunner | undefined;
  /** Runs the command on this layer over the workspace (SPEC X7). */
  overlay?: OverlayFolders;
  /** `background` for a command that outlives its call: it gets the smaller temporary space (S7). */
  lifetime?: "call" | "background";
  /** Called as the process is asked for; what it answers is told whether the sandbox came up (SPEC X8: sandbox start time). */
  observeStart?: SandboxStartObserver;
}

export type SandboxStartObserver = () => (outcome: "started" | "failed") => void;

/**
 * Prepares `bash -c command` the way every tool process starts: in its own
 * process group, with only PATH, HOME (the workspace) and terminal settings
 * in its environment, never the service's secrets, and output kept bounded
 * while it streams. It always runs under bubblewrap, as the tenant's uid and
 * within its limits (SPEC S3, S7): confined, or with Full Access's view of the
 * host (S8); in its own network namespace, empty or connected by slirp4netns
 * before the command starts (`sandbox-network.ts`). If that cannot be planned
 * this answers why, and nothing starts. Preparing is separate from starting so
 * a caller can record the command first (background commands) and still
 * refuse before anything ran.
 */
export async function prepareShell(options: ShellOptions): Promise<PreparedShell | { unavailable: string }> {
  const env: Record<string, string> = {
    PATH: options.path,
    HOME: options.cwd,
    TERM: "dumb",
    PAGER: "cat",
    GIT_PAGER: "cat",
    LANG: "C.UTF-8",
  };
  if (!options.runner) return { unavailable: sandboxUnavailableMessage("this worker was built without a sandbox runner") };
  const fullAccess = options.confinement.kind === "full_access";
  const plan = await options.runner.plan({
    command: options.command,
    workspaceDir: options.cwd,
    network: fullAccess || (options.confinement.kind === "sandbox" && options.confinement.network),
    view: fullAccess ? "host" : "confined",
    identity: options.identity,
    limits: options.limits,
    lifetime: options.lifetime ?? "call",
    ...(options.overlay ? { overlay: options.overlay } : {}),
  });
  if (!plan.ok) return { unavailable: plan.message };
  // bwrap gets the same small environment, so even its own /proc/1/environ inside shows nothing of the service.
  return {
    start: () => startProcess({ file: plan.file, args: plan.args, cwd: options.cwd, env, options, sandbox: plan }),
    discard: () => plan.release(),
  };
}

/** How long output pipes may stay open after the process exited. */
const pipeGraceMs = 1000;
/** How long a stop waits for bwrap to report its sandbox's init. */
const initReportGraceMs = 2000;
/** How long bwrap may take to exit once its sandbox's init was killed. */
const bwrapExitGraceMs = 200;

function startProcess(spec: {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  options: ShellOptions;
  sandbox: SandboxInvocation;
}): ShellProcess {
  const network = spec.sandbox.network;
  const startEnded = spec.options.observeStart?.();
  // Its error listener is attached before anything can emit: a spawn that meets EMFILE is this call's failure, not the worker's end.
  const started = startChild(spec.file, spec.args, {
    detached: true,
    // Extra pipes for bwrap and the command's gate (sandbox-start.ts).
    stdio: ["ignore", "pipe", "pipe", ...sandboxPipes(spec.sandbox)],
    cwd: spec.cwd,
    env: spec.env,
  });
  const { child } = started;
  const stdio = started.stdio ?? [];
  const output = new BoundedOutput(spec.options.headBytes, spec.options.tailBytes);
  const outputs = [stdio[1], stdio[2]].filter((stream): stream is Readable => stream !== null && stream !== undefined && "on" in stream);
  for (const stream of outputs) stream.on("data", (chunk: Buffer) => output.write(chunk));
  const blockStream = network ? ((stdio[network.blockFd] as Writable | null | undefined) ?? undefined) : undefined;
  // bwrap may be gone before it reads this (it failed, or was stopped): a broken pipe is no error here.
  blockStream?.on("error", () => {});
  feedSandbox(stdio, spec.sandbox);

  let exited = false;
  let stopped = false;
  /** Host pid of the sandbox's init (pid 1 of its PID namespace), once bwrap reported it. */
  let sandboxInit: number | undefined;
  /** slirp4netns connecting a network-granted sandbox; started once bwrap reported its init. */
  let link: NetworkLink | undefined;
  /** Why the sandbox's network failed: before the command started (it never ran), or under it (it was stopped). */
  let networkFailure: string | undefined;
  /** Why the command's gate did not let it run (its git metadata could not be protected); the whole message. */
  let gateFailure: string | undefined;
  let reportInit: (pid: number) => void = () => {};
  const initReported = new Promise<number>((resolve) => {
    reportInit = resolve;
  });
  const signal = (pid: number) => {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  const signalGroup = () => {
    if (child?.pid) signal(-child.pid);
  };
  // Killing the sandbox's init makes the kernel kill its whole PID namespace.
  // The init is killed by pid, not through bwrap's --die-with-parent alone:
  // bwrap arms that only after setting the sandbox up, so a bwrap killed
  // during setup would leave its sandbox running. The init is bwrap's child,
  // so while bwrap lives its pid cannot be reused by another process. bwrap
  // then reaps it and exits by itself; it is killed only if it lingers.
  const killSandbox = () => {
    if (sandboxInit === undefined || exited) return signalGroup();
    signal(sandboxInit);
    setTimeout(() => !exited && signalGroup(), bwrapExitGraceMs).unref();
  };

  let status = "";
  const statusStream = (stdio[spec.sandbox.statusFd] as Readable | null | undefined) ?? undefined;
  statusStream?.on("data", (chunk: Buffer) => {
    status += chunk.toString("utf8");
    if (sandboxInit !== undefined) return;
    const reported = readSandboxStart(status);
    if (reported === undefined) return;
    sandboxInit = reported;
    reportInit(reported);
    startEnded?.("started");
    if (stopped || exited) return killSandbox();
    if (!network) return;
    // The namespaces exist and bwrap waits on its block fd: connect the network, then let the command start.
    const connecting = connectNetwork(network.slirp4netns, { pid: sandboxInit, bwrapPid: child?.pid ?? 0 });
    link = connecting;
    void connecting.ready.then((outcome) => {
      if (exited || stopped) return;
      if (outcome.ok) return void blockStream?.end("1");
      networkFailure = `slirp4netns could not connect the sandbox's network (${outcome.reason})`;
      killSandbox();
    });
    // Without slirp4netns the command would run on with no network at all: stop it, and say why.
    void connecting.lost.then((reason) => {
      if (exited || stopped) return;
      networkFailure = `the sandbox lost its network, and the command was stopped (${reason})`;
      killSandbox();
    });
  });
  const statusRead = statusStream ? finished(statusStream).catch(() => {}) : Promise.resolve();
  void passGate(stdio, spec.sandbox, initReported, () => !stopped && !exited).then((outcome) => {
    if (!outcome || outcome.ok || exited || stopped) return;
    gateFailure = outcome.message;
    killSandbox();
  });

  child?.on("exit", () => {
    exited = true;
    // The sandbox is gone, and its temporary space with it.
    spec.sandbox.release();
    if (sandboxInit === undefined) startEnded?.("failed");
    // The sandbox's network goes with it: slirp4netns is SIGKILLed now. The
    // call does not wait for it to be reaped: the kernel takes 15-30 ms to
    // unregister its tap device, and a killed process runs no more code.
    link?.stop();
    // What the command left running dies with it (this also closes pipes a stray child still holds).
    signalGroup();
    // A process that left the group (setsid) may still hold the output pipes: stop waiting for them.
    setTimeout(() => {
      for (const stream of outputs) stream.destroy();
      statusStream?.destroy();
    }, pipeGraceMs).unref();
  });

  const ended = Promise.all([started.closed, statusRead]).then(([result]): ShellEnd => {
    spec.sandbox.release();
    if (result.kind === "not_started") {
      exited = true;
      startEnded?.("failed");
      return { kind: "sandbox_failed", message: sandboxUnavailableMessage(`the sandbox could not be started (${result.error.message})`) };
    }
    if (networkFailure !== undefined && !stopped)
      return { kind: "sandbox_failed", message: sandboxNetworkUnavailableMessage(networkFailure) };
    if (gateFailure !== undefined && !stopped) return { kind: "sandbox_failed", message: gateFailure };
    const reported = readSandboxStatus(status);
    if (reported.exitCode !== undefined) {
      const bySignal = signalOfExitStatus(reported.exitCode);
      return bySignal ? { kind: "signaled", signal: bySignal } : { kind: "exited", exitCode: reported.exitCode };
    }
    if (stopped || result.signal) return { kind: "signaled", signal: result.signal ?? "SIGKILL" };
    const detail = (output.render().trim() || `exit status ${result.exitCode}`).slice(-1000);
    const reason = reported.started
      ? `bash could not be started inside the sandbox (${detail})`
      : `bubblewrap could not set up the sandbox (${detail})`;
    // With the network, setup also needs unshare's namespaces: the fix is in the network message.
    return {
      kind: "sandbox_failed",
      message: network && !reported.started ? sandboxNetworkUnavailableMessage(reason) : sandboxUnavailableMessage(reason),
    };
  });

  return {
    ended,
    output,
    onOutput: (listener) => {
      for (const stream of outputs) stream.on("data", listener);
    },
    killGroup() {
      if (exited) return signalGroup();
      stopped = true;
      link?.stop();
      if (sandboxInit !== undefined) return killSandbox();
      // bwrap has not reported its init yet: kill once it does (a bwrap that
      // fails exits by itself); kill bwrap regardless if that never comes.
      setTimeout(killSandbox, initReportGraceMs).unref();
    },
  };
}
