import { spawn, type ChildProcess } from "node:child_process";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Readable, Writable } from "node:stream";
import { connectNetwork, type NetworkLink } from "../sandbox/sandbox-network.js";
import type { SandboxInvocation } from "../sandbox/sandbox-runner.js";
import { readSandboxStart } from "../sandbox/sandbox-status.js";

export interface StdioProcessOptions {
  command: string;
  args: readonly string[];
  /** The child's whole environment: nothing of the worker's is inherited. */
  env: Record<string, string>;
  cwd?: string;
  /** Between SIGTERM and SIGKILL to the process group. */
  stopGraceMs: number;
  /**
   * Run under bubblewrap (SPEC S3): `command` and `args` are then the sandbox's own
   * invocation (bwrap, or unshare for a network-granted server), which runs the server.
   */
  sandbox?: SandboxInvocation;
  /** A line longer than this (no newline yet) is a protocol error. */
  maxLineBytes?: number;
  onStderr?: (text: string) => void;
}

/** Why the server's process or stream ended. */
export type StdioEnd =
  | { kind: "exited"; code: number | null; signal: NodeJS.Signals | null }
  | { kind: "protocol"; message: string }
  | { kind: "spawn"; message: string }
  /** The sandbox's network could not be connected, or was lost. */
  | { kind: "sandbox"; message: string }
  | { kind: "closed" };

const stderrTailBytes = 4096;

/**
 * An MCP stdio client transport (like the SDK's StdioClientTransport) that starts the
 * server in its own process group with exactly the given environment, treats anything
 * on stdout that is not JSON-RPC as a protocol error that ends the connection (SPEC M3),
 * and stops the whole group: SIGTERM, then SIGKILL after a grace.
 */
export class StdioProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcess | undefined;
  private buffer: Buffer = Buffer.alloc(0);
  private stderrTail = "";
  private endReason: StdioEnd | undefined;
  private exited: Promise<void> | undefined;
  private closed = false;
  /** Host pid of a sandboxed server's init, once bwrap reported it: killing it ends the whole sandbox. */
  private sandboxInit: number | undefined;
  private link: NetworkLink | undefined;

  constructor(private readonly options: StdioProcessOptions) {}

  /** The group's id (the leader's pid) once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Why the connection ended, once it has. */
  get end(): StdioEnd | undefined {
    return this.endReason;
  }

  /** The last few KiB the server wrote to stderr. */
  get stderr(): string {
    return this.stderrTail;
  }

  start(): Promise<void> {
    if (this.child) throw new Error("StdioProcessTransport already started");
    const sandbox = this.options.sandbox;
    const network = sandbox?.network ?? null;
    // Extra pipes for bwrap: its status fd, and with the network its block fd and the resolv.conf it binds.
    const extra: Array<"ignore" | "pipe"> = [];
    for (const fd of [sandbox?.statusFd, network?.blockFd, network?.resolvConf?.fd]) {
      if (fd === undefined) continue;
      while (extra.length <= fd - 3) extra.push("ignore");
      extra[fd - 3] = "pipe";
    }
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, [...this.options.args], {
        env: this.options.env,
        cwd: this.options.cwd,
        stdio: ["pipe", "pipe", "pipe", ...extra],
        detached: true,
        shell: false,
      });
      this.child = child;
      this.exited = new Promise((done) => child.once("close", () => done()));
      child.once("error", (error) => {
        this.finish({ kind: "spawn", message: error.message });
        reject(error);
      });
      child.once("spawn", () => resolve());
      child.once("close", (code, signal) => this.finish({ kind: "exited", code, signal }));
      child.once("exit", () => this.link?.stop());
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => this.receive(chunk));
      child.stdout?.on("error", (error) => this.onerror?.(error));
      child.stderr?.setEncoding("utf8");
      child.stderr?.on("data", (text: string) => {
        this.stderrTail = (this.stderrTail + text).slice(-stderrTailBytes);
        this.options.onStderr?.(text);
      });
      if (sandbox) this.watchSandbox(child, sandbox);
    });
  }

  /** Learns the sandbox's init from bwrap's status fd and, for a network-granted server, connects slirp4netns before the server starts. */
  private watchSandbox(child: ChildProcess, sandbox: SandboxInvocation): void {
    const network = sandbox.network;
    const pipe = (fd: number | undefined) => (fd === undefined ? undefined : ((child.stdio[fd] as Writable | null) ?? undefined));
    const block = pipe(network?.blockFd);
    const resolvConf = pipe(network?.resolvConf?.fd);
    // bwrap may be gone before it reads these: a broken pipe is no error here.
    block?.on("error", () => {});
    resolvConf?.on("error", () => {});
    resolvConf?.end(network?.resolvConf?.content);
    const status = child.stdio[sandbox.statusFd] as Readable | null;
    let text = "";
    status?.on("error", () => {});
    status?.on("data", (chunk: Buffer) => {
      if (this.sandboxInit !== undefined) return;
      text += chunk.toString("utf8");
      const init = readSandboxStart(text);
      if (init === undefined) return;
      this.sandboxInit = init;
      if (this.closed) return this.killSandbox();
      if (!network) return;
      const link = connectNetwork(network.slirp4netns, { pid: init, bwrapPid: child.pid ?? 0 });
      this.link = link;
      void link.ready.then((outcome) => {
        if (this.closed) return;
        if (outcome.ok) return void block?.end("1");
        this.fail(`slirp4netns could not connect the server's sandbox network (${outcome.reason})`, "sandbox");
      });
      void link.lost.then((reason) => {
        if (!this.closed) this.fail(`the server's sandbox lost its network (${reason})`, "sandbox");
      });
    });
  }

  /** Killing the sandbox's init makes the kernel kill its whole PID namespace, whatever bwrap is doing. */
  private killSandbox(): void {
    if (this.sandboxInit === undefined) return;
    try {
      process.kill(this.sandboxInit, "SIGKILL");
    } catch {
      // gone already
    }
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const newline = this.buffer.indexOf(10);
      if (newline === -1) break;
      const line = this.buffer.toString("utf8", 0, newline).replace(/\r$/, "");
      this.buffer = this.buffer.subarray(newline + 1);
      if (line.trim() === "") continue;
      let message: JSONRPCMessage;
      try {
        message = deserializeMessage(line);
      } catch {
        const shown = line.length > 120 ? `${line.slice(0, 120)}…` : line;
        this.fail(`the server wrote something that is not JSON-RPC to stdout: ${JSON.stringify(shown)}`);
        return;
      }
      this.onmessage?.(message);
      if (this.closed) return;
    }
    const max = this.options.maxLineBytes ?? 64 * 1024 * 1024;
    if (this.buffer.length > max) this.fail(`the server wrote a line longer than ${max} bytes to stdout`);
  }

  private fail(message: string, kind: "protocol" | "sandbox" = "protocol"): void {
    this.endReason ??= { kind, message };
    this.onerror?.(new Error(message));
    void this.close();
  }

  private finish(reason: StdioEnd): void {
    this.endReason ??= reason;
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.closed || !stdin.writable) return Promise.reject(new Error("Not connected"));
    return new Promise((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Stops the whole process group: SIGTERM, then SIGKILL after the grace. Resolves when it is gone. */
  async close(): Promise<void> {
    this.endReason ??= { kind: "closed" };
    const child = this.child;
    if (child?.pid !== undefined) {
      try {
        child.stdin?.end();
      } catch {
        // already closed
      }
      this.link?.stop();
      if (this.options.sandbox) {
        // Closing stdin lets the server end by itself; then the sandbox ends whole.
        await Promise.race([this.exited, new Promise((done) => setTimeout(done, this.options.stopGraceMs).unref())]);
        this.killSandbox();
      }
      await stopProcessGroup(child.pid, this.options.stopGraceMs);
      await Promise.race([this.exited, new Promise((done) => setTimeout(done, 1000).unref())]);
    }
    this.finish(this.endReason);
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // gone already
  }
}

/** SIGTERM to the group, SIGKILL to whatever is left of it after `graceMs`. */
async function stopProcessGroup(pgid: number, graceMs: number): Promise<void> {
  if (!groupAlive(pgid)) return;
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive(pgid)) return;
    await new Promise((done) => setTimeout(done, 25));
  }
  signalGroup(pgid, "SIGKILL");
  const killDeadline = Date.now() + 2000;
  while (groupAlive(pgid) && Date.now() < killDeadline) await new Promise((done) => setTimeout(done, 10));
}
