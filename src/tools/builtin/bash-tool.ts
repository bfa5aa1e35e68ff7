import { findPermanentDelete } from "../shell/permanent-delete.js";
import type { SandboxRunner } from "../../sandbox/sandbox-runner.js";
import { prepareShell } from "../shell/spawn-shell.js";
import { defineTool, errorResult, textResult, type AnyTool } from "../tool.js";

interface BashArgs {
  command: string;
  timeoutMs?: number;
  background?: boolean;
}

const defaultTimeoutMs = 120_000;
const maxTimeoutMs = 600_000;
/** A small head (the first error is often early) and mostly the tail (SPEC O1). */
const headBytes = 4 * 1024;
const tailBytes = 28 * 1024;

/**
 * Runs a shell command in the workspace (see `prepareShell`): its process group
 * is killed whole on timeout, cancel, and when the command ends, so nothing it
 * started outlives the call. Outside Full Access, permanent deletes are refused
 * and the command runs in the sandbox (`sandbox`; without one such calls fail
 * closed with `sandbox_unavailable`).
 */
export function createBashTool(options: { path: string; sandbox?: SandboxRunner }): AnyTool {
  return defineTool<BashArgs>({
    name: "bash",
    description:
      "Run a shell command (bash) in the project workspace and return its exit status and output (long output keeps the start and mostly the end). Use the delete tool, not rm, to delete files.",
    parameters: {
      type: "object",
      properties: {
        command: { type: "string", minLength: 1, maxLength: 100_000, description: "The command line, run with bash -c." },
        timeoutMs: { type: "integer", minimum: 100, maximum: maxTimeoutMs, description: `Time limit in milliseconds (default ${defaultTimeoutMs}).` },
        background: {
          type: "boolean",
          description: "Start the command in the background and answer its id at once; follow it with command_status, command_output and command_cancel.",
        },
      },
      required: ["command"],
      additionalProperties: false,
    },
    exposure: "direct",
    sideEffect: "exec",
    approvalSubject: (args) => ({ kind: "command", command: args.command }),
    async run(context, args) {
      if (context.approvalMode !== "full_access") {
        const reason = findPermanentDelete(args.command);
        if (reason) return errorResult("permanent_delete_refused", `Refused: ${reason}.`);
      }
      if (args.background) {
        const started = await context.commands.start(args.command);
        // Background commands are sandboxed by their owner; a refusal there names its code.
        if ("error" in started) return errorResult("code" in started && typeof started.code === "string" ? started.code : "too_many_commands", started.error);
        return textResult(`Started background command ${started.id}. Use command_status, command_output or command_cancel with this id.`);
      }
      const prepared = await prepareShell({
        command: args.command,
        cwd: context.workspaceDir,
        path: options.path,
        headBytes,
        tailBytes,
        sandbox: context.sandbox,
        runner: options.sandbox,
      });
      if ("unavailable" in prepared) return errorResult("sandbox_unavailable", prepared.unavailable);
      if (context.signal.aborted) return errorResult("cancelled", "(no output)\n\n[cancelled]");
      const { ended, output, killGroup } = prepared.start();
      let stopped: "timeout" | "cancelled" | undefined;
      const timer = setTimeout(() => {
        stopped = "timeout";
        killGroup();
      }, args.timeoutMs ?? defaultTimeoutMs);
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
      const text = output.render();
      const body = text.length > 0 ? text : "(no output)\n";
      if (stopped === "timeout") return errorResult("timeout", `${body}\n[killed after ${args.timeoutMs ?? defaultTimeoutMs} ms]`);
      if (stopped === "cancelled") return errorResult("cancelled", `${body}\n[cancelled]`);
      if (end.kind === "sandbox_failed") return errorResult("sandbox_unavailable", end.message);
      if (end.kind === "signaled") return errorResult("killed", `${body}\n[killed by ${end.signal}]`);
      if (end.exitCode !== 0) return errorResult("exit_code", `${body}\n[exit code ${end.exitCode}]`);
      return textResult(`${body}\n[exit code 0]`);
    },
  });
}
