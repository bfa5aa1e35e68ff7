import { z } from "zod";
import type { ProcessLimits } from "../../core/process-limits.js";
import { findPermanentDelete } from "../shell/permanent-delete.js";
import type { PreparedLayer, ShellEnd } from "../shell/spawn-shell.js";
import { defineTool, errorResult, textResult, type FileChangeRecord, type ToolContext, type ToolResult } from "../tool.js";

const defaultTimeoutMs = 120_000;
const maxTimeoutMs = 600_000;

const bashArguments = z
  .object({
    command: z.string().min(1).max(100_000).describe("The command line, run with bash -c."),
    timeoutMs: z.int().min(100).max(maxTimeoutMs).describe(`Time limit in milliseconds (default ${defaultTimeoutMs}).`).optional(),
    background: z
      .boolean()
      .describe(
        "Start the command in the background and answer its id at once; follow it with command_status, command_output and command_cancel.",
      )
      .optional(),
  })
  .strict();

/** A small head (the first error is often early) and mostly the tail (SPEC O1). */
const headBytes = 4 * 1024;
const tailBytes = 28 * 1024;

/**
 * Runs a shell command in the workspace through the call's processes (see
 * `prepareShell`): confined, as the tenant's uid, within its limits; its
 * process tree is killed whole on timeout, cancel, and when the command ends,
 * so nothing it started outlives the call. Outside Full Access, permanent
 * deletes are refused. When the confinement cannot be set up the call fails
 * closed with `sandbox_unavailable`.
 */
export const bashTool = defineTool({
  name: "bash",
  description:
    "Run a shell command (bash) in the project workspace and return its exit status and output (long output keeps the start and mostly the end). Use the delete tool, not rm, to delete files.",
  parameters: bashArguments,
  exposure: "direct",
  sideEffect: "exec",
  reportsWorkspaceChanges: true,
  approvalSubject: (args) => ({ kind: "command", command: args.command, background: args.background === true }),
  async run(context, args) {
    if (context.approvalMode !== "full_access") {
      const reason = findPermanentDelete(args.command);
      if (reason) return errorResult("permanent_delete_refused", `Refused: ${reason}.`);
    }
    if (args.background) {
      const started = await context.commands.start(args.command);
      // Background commands are sandboxed by their owner; a refusal there names its code.
      if ("error" in started)
        return errorResult("code" in started && typeof started.code === "string" ? started.code : "too_many_commands", started.error);
      return textResult(`Started background command ${started.id}. Use command_status, command_output or command_cancel with this id.`);
    }
    const prepared = await context.processes.prepare(args.command, { headBytes, tailBytes }, { recordChanges: true });
    if ("unavailable" in prepared) return errorResult(prepared.code, prepared.unavailable);
    if (context.signal.aborted) {
      prepared.discard();
      return errorResult("cancelled", "(no output)\n\n[cancelled]");
    }
    // The tenant's wall-time limit caps whatever the model asked for (S7).
    const timeoutMs = Math.min(args.timeoutMs ?? defaultTimeoutMs, context.processes.limits.wallSeconds * 1000);
    const { ended, output, killGroup } = prepared.start();
    let stopped: "timeout" | "cancelled" | undefined;
    const timer = setTimeout(() => {
      stopped = "timeout";
      killGroup();
    }, timeoutMs);
    const onAbort = () => {
      stopped = "cancelled";
      killGroup();
    };
    context.signal.addEventListener("abort", onAbort, { once: true });
    let end;
    try {
      end = await ended;
    } finally {
      clearTimeout(timer);
      context.signal.removeEventListener("abort", onAbort);
      killGroup();
    }
    // Whatever ended the command, what it wrote is recorded and applied (a timed-out build's output too).
    const changes = await settleChanges(prepared.layer, context);
    const result = describeEnd(end, stopped, timeoutMs, args, output.render(), context.processes.limits);
    if (!changes) return result;
    const note = changes.note ? `\n[file changes: ${changes.note}]` : "";
    const [first, ...rest] = result.content;
    const content = note && first?.type === "text" ? [{ ...first, text: `${first.text}${note}` }, ...rest] : result.content;
    return { ...result, content, ...(changes.records.length > 0 ? { fileChanges: changes.records } : {}) };
  },
});

async function settleChanges(
  layer: PreparedLayer | undefined,
  context: ToolContext,
): Promise<{ records: FileChangeRecord[]; note: string | null } | null> {
  if (!layer) return null;
  try {
    return await layer.settle(context.blobs);
  } catch (error) {
    return {
      records: [],
      note: `this command's changes could not be applied yet (${(error as Error).message}); they are kept, and settled before the next call of this project runs`,
    };
  }
}

function describeEnd(
  end: ShellEnd,
  stopped: "timeout" | "cancelled" | undefined,
  timeoutMs: number,
  args: z.input<typeof bashArguments>,
  text: string,
  limits: ProcessLimits,
): ToolResult {
  const body = text.length > 0 ? text : "(no output)\n";
  if (stopped === "timeout")
    return errorResult(
      "timeout",
      `${body}\n[killed after ${timeoutMs} ms${timeoutMs < (args.timeoutMs ?? defaultTimeoutMs) ? ", the wall-time limit of this deployment" : ""}]`,
    );
  if (stopped === "cancelled") return errorResult("cancelled", `${body}\n[cancelled]`);
  if (end.kind === "sandbox_failed") return errorResult("sandbox_unavailable", end.message);
  if (end.kind === "signaled")
    return errorResult(limitCodeOf(end.signal), `${body}\n[killed by ${end.signal}${limitNote(end.signal, limits)}]`);
  if (end.exitCode !== 0) return errorResult("exit_code", `${body}\n[exit code ${end.exitCode}${limitHint(text, limits)}]`);
  return textResult(`${body}\n[exit code 0]`);
}

/** A signal the kernel sends when a limit is reached gets its own code, so the model knows why (S7). */
function limitCodeOf(signal: string): string {
  if (signal === "SIGXCPU") return "cpu_limit";
  if (signal === "SIGXFSZ") return "file_size_limit";
  return "killed";
}

function limitNote(signal: string, limits: ProcessLimits): string {
  if (signal === "SIGXCPU") return `: the CPU-time limit of ${limits.cpuSeconds} s per process was reached`;
  if (signal === "SIGXFSZ") return `: a file reached the size limit of ${limits.fileSizeBytes} bytes`;
  return `; limits: ${describeLimits(limits)}`;
}

/** What processes print when an rlimit refused them memory or a new process. */
const limitMessages =
  /Cannot allocate memory|MemoryError|out of memory|allocation failed|Resource temporarily unavailable|No space left on device|Disk quota exceeded/i;

/** The limits, when the output says a command may have run into one of them; nothing otherwise (most failures are not limits). */
function limitHint(output: string, limits: ProcessLimits): string {
  return limitMessages.test(output) ? `; this call's limits: ${describeLimits(limits)}` : "";
}

/** The limits in a line the model can read when a command failed, maybe because of one of them. */
function describeLimits(limits: ProcessLimits): string {
  const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;
  return `memory ${mib(limits.memoryBytes)} per process, ${limits.processes} processes, CPU ${limits.cpuSeconds} s, file size ${mib(limits.fileSizeBytes)}, /tmp ${mib(limits.tmpBytes)}`;
}
