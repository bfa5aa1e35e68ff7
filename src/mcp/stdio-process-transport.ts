import { spawn, type ChildProcess } from "node:child_process";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Readable, Writable } from "node:stream";
import { connectNetwork, type NetworkLink } from "../sandbox/sandbox-network.js";
import type { SandboxInvocation } from "../sandbox/sandbox-runner.js";
import { readSandboxStart } from "../sandbox/sandbox-status.js";
import { feedSandbox, passGate, sandboxPipes } from "../sandbox/sandbox-start.js";

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
  /** A line (one message) longer than this ends the connection (kind `too-large`): the bytes buffered for one line stay bounded. */
  maxLineBytes: number;
  onStderr?: (text: string) => void;
}

/** Why the server's process or stream ended. */
export type StdioEnd =
  | { kind: "exited"; code: number | null; signal: NodeJS.Signals | null }
  | { kind: "protocol"; message: string }
  /** A message longer than `maxLineBytes`. */
  | { kind: "too-large"; message: string }
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
  /** The chunks of the line not yet ended by a newline, and their length: joined once, when the newline comes. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Set once the stream broke: later output is dropped unread while the process is stopped. */
  private failed = false;
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
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, [...this.options.args], {
        env: this.options.env,
        cwd: this.options.cwd,
        // Extra pipes for bwrap and the server's gate (sandbox-start.ts).
        stdio: ["pipe", "pipe", "pipe", ...(sandbox ? sandboxPipes(sandbox) : [])],
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
    const block = network ? ((child.stdio[network.blockFd] as Writable | null) ?? undefined) : undefined;
    // bwrap may be gone before it reads this: a broken pipe is no error here.
    block?.on("error", () => {});
    feedSandbox(child.stdio, sandbox);
    let reportInit: (pid: number) => void = () => {};
    const initReported = new Promise<number>((resolve) => {
      reportInit = resolve;
    });
    void passGate(child.stdio, sandbox, initReported, () => !this.closed).then((outcome) => {
      if (outcome && !outcome.ok && !this.closed) this.fail(outcome.message, "sandbox");
    });
    const status = child.stdio[sandbox.statusFd] as Readable | null;
    let text = "";
    status?.on("error", () => {});
    status?.on("data", (chunk: Buffer) => {
      if (this.sandboxInit !== undefined) return;
      text += chunk.toString("utf8");
      const init = readSandboxStart(text);
      if (init === undefined) return;
      this.sandboxInit = init;
      reportInit(init);
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

  /**
   * Splits stdout into lines in linear time: each chunk is searched for a newline once and each
   * byte is copied once, when its line ends (joining the whole buffer on every chunk made a 60 MiB
   * line cost seconds of CPU). A line past `maxLineBytes` ends the connection before more is kept.
   */
  private receive(chunk: Buffer): void {
    let rest = chunk;
    while (!this.closed && !this.failed) {
      const newline = rest.indexOf(10);
      const length = this.pendingBytes + (newline === -1 ? rest.length : newline);
      if (length > this.options.maxLineBytes) {
        this.pending = [];
        this.pendingBytes = 0;
        this.fail(`the server wrote a message longer than ${this.options.maxLineBytes} bytes to stdout`, "too-large");
        return;
      }
      if (newline === -1) {
        if (rest.length > 0) {
          this.pending.push(rest);
          this.pendingBytes += rest.length;
        }
        return;
      }
      const line = this.takeLine(rest.subarray(0, newline));
      rest = rest.subarray(newline + 1);
      this.handleLine(line);
    }
  }

  private takeLine(end: Buffer): string {
    const bytes = this.pending.length === 0 ? end : Buffer.concat([...this.pending, end], this.pendingBytes + end.length);
    this.pending = [];
    this.pendingBytes = 0;
    return bytes.toString("utf8").replace(/\r$/, "");
  }

  private handleLine(line: string): void {
    if (line.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line);
    } catch {
      const shown = line.length > 120 ? `${line.slice(0, 120)}…` : line;
      this.fail(`the server wrote something that is not JSON-RPC to stdout: ${JSON.stringify(shown)}`);
      return;
    }
    this.onmessage?.(message);
  }

  private fail(message: string, kind: "protocol" | "too-large" | "sandbox" = "protocol"): void {
    this.failed = true;
    this.endReason ??= { kind, message };
    this.onerror?.(new Error(message));
    void this.close();
  }

  private finish(reason: StdioEnd): void {
    this.endReason ??= reason;
    // Its temporary space goes back to the tenant's budget: the server is gone, or never started (release is idempotent).
    this.options.sandbox?.release();
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
