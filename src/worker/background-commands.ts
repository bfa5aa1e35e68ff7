import type { Store } from "../store/store.js";
import { storableText } from "../core/storable-text.js";
import { type CommandId, type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import type { BoundedOutput } from "../tools/shell/bounded-output.js";
import type { PreparedShell, ShellEnd } from "../tools/shell/spawn-shell.js";
import type { CallProcesses } from "../tools/call-processes.js";
import type { CommandStatus } from "../core/statuses.js";

/**
 * The background commands this worker owns (SPEC B1-B4). A command's process
 * lives as long as this worker, not its job. The worker keeps a bounded view
 * of the output (B2), flushes it to Postgres every second with a lease
 * renewal, and writes the true final status when the process ends. Anyone can
 * read a command; a cancel reaches the owner through Redis. With a sandbox
 * grant the process runs in the sandbox (SPEC S3); when the sandbox cannot be
 * planned nothing is recorded or started and the answer carries
 * `code: "sandbox_unavailable"`.
 */
export interface BackgroundCommands {
  start(input: {
    tenantId: TenantId;
    sessionId: SessionId;
    runId: RunId;
    command: string;
    processes: CallProcesses;
  }): Promise<{ id: CommandId } | { error: string; code?: string }>;
  /** Kills the command if this worker owns it; answers whether it did. */
  cancel(commandId: CommandId): boolean;
  /** How many commands this worker runs now (its liveness record shows it, D9). */
  count(): number;
  /** Kills every command of this worker (shutdown) and records them as killed. */
  stop(): Promise<void>;
}

interface LiveCommand {
  id: CommandId;
  kill(): void;
  output: BoundedOutput;
  dirty: boolean;
  cancelled: boolean;
  finished: Promise<void>;
}

/** At most this many live commands per worker. */
const maxLive = 64;
const flushIntervalMs = 1000;
/** 1 MiB kept per command: a little head, mostly tail. */
const headBytes = 64 * 1024;
const tailBytes = 960 * 1024;

/** What every command of this worker shares. */
interface Owner {
  store: Pick<Store, "commands">;
  workerId: string;
  /** The lease every command of this worker holds, renewed with each flush: this long from each write. */
  leaseMs: number;
  live: Map<CommandId, LiveCommand>;
  onError: (error: unknown) => void;
}

type StartInput = Parameters<BackgroundCommands["start"]>[0];

export function startBackgroundCommands(options: {
  store: Pick<Store, "commands">;
  workerId: string;
  leaseMs: number;
  onError: (error: unknown) => void;
}): BackgroundCommands {
  const { leaseMs } = options;
  const owner: Owner = { ...options, live: new Map() };
  const { live } = owner;
  const timer = setInterval(
    () => {
      const ids = [...live.keys()];
      if (ids.length === 0) return;
      Promise.all([
        ...[...live.values()].filter((command) => command.dirty).map((command) => flush(owner, command)),
        owner.store.commands.renewCommandLeases(owner.workerId, ids, leaseMs),
      ]).catch(options.onError);
    },
    Math.min(flushIntervalMs, Math.floor(leaseMs / 3)),
  );
  timer.unref();

  return {
    start: (input) => startCommand(owner, input),
    count: () => live.size,
    cancel(commandId) {
      const command = live.get(commandId);
      if (!command) return false;
      command.cancelled = true;
      command.kill();
      return true;
    },
    async stop() {
      clearInterval(timer);
      const running = [...live.values()];
      for (const command of running) command.kill();
      await Promise.all(running.map((command) => command.finished));
    },
  };
}

async function flush(owner: Owner, command: LiveCommand): Promise<void> {
  command.dirty = false;
  const { output } = command;
  await owner.store.commands.flushCommandOutput(
    owner.workerId,
    command.id,
    { output: storableText(output.render()), outputBytes: output.bytes, outputLines: output.lines },
    owner.leaseMs,
  );
}

async function startCommand(owner: Owner, input: StartInput): Promise<{ id: CommandId } | { error: string; code?: string }> {
  if (owner.live.size >= maxLive)
    return { error: `this worker already runs ${maxLive} background commands; wait for one to end or cancel one` };
  const prepared = await input.processes.prepare(input.command, { headBytes, tailBytes }, { summarizeChanges: true, background: true });
  if ("unavailable" in prepared) return { error: prepared.unavailable, code: prepared.code };
  const id = newId("cmd");
  const allowed = input.processes.limits.backgroundCommands;
  // Counted and recorded under the tenant's lock, so racing starts on any worker never pass the cap together.
  const row = {
    id,
    tenantId: input.tenantId,
    sessionId: input.sessionId,
    runId: input.runId,
    command: input.command,
    ownerWorker: owner.workerId,
    leaseMs: owner.leaseMs,
  };
  const recorded = await owner.store.commands.recordCommandUnderCap(row, allowed).catch((error: unknown) => {
    prepared.discard();
    throw error;
  });
  if (!recorded) {
    prepared.discard();
    return {
      error: `this tenant already runs ${allowed} background commands, its limit; wait for one to end or cancel one`,
      code: "too_many_commands",
    };
  }
  owner.live.set(id, runCommand(owner, id, prepared, input.processes.limits.backgroundSeconds));
  return { id };
}

/** Starts a recorded command; it lives at most `lifetimeSeconds`, then it is killed and says why. */
function runCommand(owner: Owner, id: CommandId, prepared: PreparedShell, lifetimeSeconds: number): LiveCommand {
  const { ended, output, onOutput, killGroup } = prepared.start();
  const command: LiveCommand = { id, kill: killGroup, output, dirty: false, cancelled: false, finished: Promise.resolve() };
  const expiry = setTimeout(() => {
    output.write(Buffer.from(`\n[stopped: background commands live at most ${lifetimeSeconds} s]\n`));
    command.dirty = true;
    killGroup();
  }, lifetimeSeconds * 1000);
  expiry.unref();
  onOutput(() => {
    command.dirty = true;
  });
  command.finished = ended.then(async (end) => {
    clearTimeout(expiry);
    owner.live.delete(id);
    await recordEnd(owner, command, prepared, end);
  });
  return command;
}

/** Writes the command's true end, whatever happened meanwhile: a killed process is never "exit 0" (B2). */
async function recordEnd(owner: Owner, command: LiveCommand, prepared: PreparedShell, end: ShellEnd): Promise<void> {
  const { output } = command;
  // The sandbox failing to start is the command's outcome: say why in its output.
  if (end.kind === "sandbox_failed") output.write(Buffer.from(`\n${end.message}\n`));
  // What it changed, summarized at its end (SPEC X7); no tool result waits for this.
  const summary =
    end.kind === "sandbox_failed"
      ? null
      : await prepared.changeSummary
          ?.finish()
          .catch((error: unknown) => `[what this command changed could not be summarized: ${(error as Error).message}]`);
  if (summary) output.write(Buffer.from(`\n${summary}\n`));
  const status: CommandStatus = command.cancelled
    ? "cancelled"
    : end.kind === "signaled"
      ? "killed"
      : end.kind === "exited" && end.exitCode === 0
        ? "exited"
        : "failed";
  await owner.store.commands
    .finishCommand(owner.workerId, command.id, {
      status,
      exitCode: end.kind === "exited" ? end.exitCode : null,
      signal: end.kind === "signaled" ? end.signal : null,
      output: storableText(output.render()),
      outputBytes: output.bytes,
      outputLines: output.lines,
    })
    .catch(owner.onError);
}
