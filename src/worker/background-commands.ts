import type { Database } from "../db/client.js";
import { commandLease, finishCommand, flushCommandOutput, recordCommandUnderCap, renewCommandLeases } from "../store/commands.js";
import { storableText } from "../core/storable-text.js";
import { newId } from "../ids.js";
import type { BoundedOutput } from "../tools/shell/bounded-output.js";
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
    tenantId: string;
    sessionId: string;
    runId: string;
    command: string;
    processes: CallProcesses;
  }): Promise<{ id: string } | { error: string; code?: string }>;
  /** Kills the command if this worker owns it; answers whether it did. */
  cancel(commandId: string): boolean;
  /** How many commands this worker runs now (its liveness record shows it, D9). */
  count(): number;
  /** Kills every command of this worker (shutdown) and records them as killed. */
  stop(): Promise<void>;
}

interface LiveCommand {
  id: string;
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

export function startBackgroundCommands(options: {
  db: Database;
  workerId: string;
  leaseMs: number;
  onError: (error: unknown) => void;
}): BackgroundCommands {
  const { db, workerId, leaseMs } = options;
  const live = new Map<string, LiveCommand>();
  const lease = commandLease(leaseMs);

  const flush = async (command: LiveCommand) => {
    command.dirty = false;
    await flushCommandOutput(
      db,
      workerId,
      command.id,
      { output: storableText(command.output.render()), outputBytes: command.output.bytes, outputLines: command.output.lines },
      lease,
    );
  };
  const timer = setInterval(
    () => {
      const ids = [...live.keys()];
      if (ids.length === 0) return;
      Promise.all([
        ...[...live.values()].filter((command) => command.dirty).map(flush),
        renewCommandLeases(db, workerId, ids, lease),
      ]).catch(options.onError);
    },
    Math.min(flushIntervalMs, Math.floor(leaseMs / 3)),
  );
  timer.unref();

  return {
    async start(input) {
      if (live.size >= maxLive)
        return { error: `this worker already runs ${maxLive} background commands; wait for one to end or cancel one` };
      const prepared = await input.processes.prepare(input.command, { headBytes, tailBytes }, { summarizeChanges: true, background: true });
      if ("unavailable" in prepared) return { error: prepared.unavailable, code: prepared.code };
      const id = newId("cmd");
      const { backgroundCommands: allowed, backgroundSeconds: lifetime } = input.processes.limits;
      // Counted and recorded under the tenant's lock, so racing starts on any worker never pass the cap together.
      const recorded = await recordCommandUnderCap(
        db,
        {
          id,
          tenantId: input.tenantId,
          sessionId: input.sessionId,
          runId: input.runId,
          command: input.command,
          ownerWorker: workerId,
          leaseUntil: lease,
        },
        allowed,
      ).catch((error: unknown) => {
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
      const { ended, output, onOutput, killGroup } = prepared.start();
      const command: LiveCommand = { id, kill: killGroup, output, dirty: false, cancelled: false, finished: Promise.resolve() };
      // A command lives at most the tenant's lifetime limit; then it is killed and says why.
      const expiry = setTimeout(() => {
        output.write(Buffer.from(`\n[stopped: background commands live at most ${lifetime} s]\n`));
        command.dirty = true;
        killGroup();
      }, lifetime * 1000);
      expiry.unref();
      onOutput(() => {
        command.dirty = true;
      });
      command.finished = ended.then(async (end) => {
        clearTimeout(expiry);
        live.delete(id);
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
        // The truth, whatever happened meanwhile: a killed process is never "exit 0" (B2).
        const status: CommandStatus = command.cancelled
          ? "cancelled"
          : end.kind === "signaled"
            ? "killed"
            : end.kind === "exited" && end.exitCode === 0
              ? "exited"
              : "failed";
        await finishCommand(db, workerId, id, {
          status,
          exitCode: end.kind === "exited" ? end.exitCode : null,
          signal: end.kind === "signaled" ? end.signal : null,
          output: storableText(command.output.render()),
          outputBytes: command.output.bytes,
          outputLines: command.output.lines,
        }).catch(options.onError);
      });
      live.set(id, command);
      return { id };
    },
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
