import type { Readable, Writable } from "node:stream";
import { gateGo } from "./sandbox-gate.js";
import type { SandboxInvocation } from "./sandbox-runner.js";

/**
 * What every starter of a sandbox invocation does besides running it (the
 * shell's `spawn-shell.ts`, MCP's `stdio-process-transport.ts`): the extra
 * descriptors bwrap and the command's gate read and write, what is written to
 * them, and the gate itself.
 *
 * The gate: when the workspace holds git metadata to protect, the sandbox's
 * first program is a fixed prelude (`sandbox-gate.ts`) that tells the worker the
 * sandbox is set up (fd `readyFd`), then waits for its go (fd `goFd`) before it
 * runs the command; meanwhile the worker protects the git metadata from inside
 * the sandbox (`git-guard.ts`). bwrap's own `--block-fd` would not do: it
 * waits at the right point, but tells no one it got there.
 */

type Stdio = ReadonlyArray<Readable | Writable | null | undefined>;

/** The stdio entries after stdin, stdout and stderr: a pipe at each descriptor the invocation uses. */
export function sandboxPipes(invocation: SandboxInvocation): Array<"ignore" | "pipe"> {
  const extra: Array<"ignore" | "pipe"> = [];
  const { network, gate } = invocation;
  for (const fd of [invocation.statusFd, invocation.seccomp.fd, network?.blockFd, network?.resolvConf?.fd, gate?.readyFd, gate?.goFd]) {
    if (fd === undefined) continue;
    while (extra.length <= fd - 3) extra.push("ignore");
    extra[fd - 3] = "pipe";
  }
  return extra;
}

/** Writes what bwrap reads at start: the seccomp program and, with the network, the resolv.conf it binds. */
export function feedSandbox(stdio: Stdio, invocation: SandboxInvocation): void {
  const write = (fd: number, content: string | Buffer) => {
    const stream = stdio[fd] as Writable | null | undefined;
    // bwrap may be gone before it reads (it failed, or was stopped): a broken pipe is no error here.
    stream?.on("error", () => {});
    stream?.end(content);
  };
  write(invocation.seccomp.fd, invocation.seccomp.program);
  const resolvConf = invocation.network?.resolvConf;
  if (resolvConf) write(resolvConf.fd, resolvConf.content);
}

/**
 * Runs the gate of a gated invocation: once the prelude reports, protects the
 * workspace's git metadata and lets the command go. Answers null when the
 * sandbox ended first (nothing to do), or why the command must not run (the
 * caller then kills the sandbox).
 */
export function passGate(
  stdio: Stdio,
  invocation: SandboxInvocation,
  initPid: Promise<number>,
  /** Whether the command may still start (the caller has not stopped it meanwhile). */
  wanted: () => boolean,
): Promise<{ ok: true } | { ok: false; message: string } | null> {
  const gate = invocation.gate;
  if (!gate) return Promise.resolve({ ok: true });
  const ready = stdio[gate.readyFd] as Readable | null | undefined;
  const go = stdio[gate.goFd] as Writable | null | undefined;
  go?.on("error", () => {});
  ready?.on("error", () => {});
  return new Promise((resolve) => {
    if (!ready) return resolve(null);
    let reported = false;
    ready.once("data", () => {
      reported = true;
      void initPid
        .then((pid) => gate.guard(pid))
        .catch((error: unknown) => ({ ok: false as const, message: `the sandbox's gate failed (${(error as Error).message})` }))
        .then((guarded) => {
          if (guarded.ok && wanted()) go?.end(`${gateGo}\n`);
          resolve(guarded);
        });
    });
    // The prelude closes its end once it reported; only an end before that means the sandbox is gone.
    const ended = () => {
      if (!reported) resolve(null);
    };
    ready.once("end", ended);
    ready.once("close", ended);
  });
}
