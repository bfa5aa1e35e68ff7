import { z } from "zod";
import { defineTool, errorResult, textResult, type AnyTool, type BackgroundCommandView } from "../tool.js";

const commandId = z.string().min(1).max(64).describe("The id bash answered for a background command.");

function describe(command: BackgroundCommandView): string {
  const end =
    command.status === "running"
      ? "still running"
      : command.status === "lost"
        ? "lost: the worker running it stopped; its outcome is unknown"
        : command.status;
  const detail = command.exitCode !== null ? `, exit code ${command.exitCode}` : command.signal ? `, signal ${command.signal}` : "";
  return `Command ${command.id} (${JSON.stringify(command.command)}): ${end}${detail}; ${command.outputLines} lines, ${command.outputBytes} bytes of output so far.`;
}

/** Status, output and cancel of background commands (SPEC B1); they read what the owning worker last flushed. */
export const commandTools: AnyTool[] = [
  defineTool({
    name: "command_status",
    description: "Show whether a background command is running, and how it ended.",
    parameters: z.object({ id: commandId }).strict(),
    exposure: "direct",
    sideEffect: "read",
    parallel: true,
    async run(context, args) {
      const command = await context.commands.get(args.id);
      return command ? textResult(describe(command)) : errorResult("unknown_command", `No background command ${args.id} in this session.`);
    },
  }),
  defineTool({
    name: "command_output",
    description:
      "Read a background command's output (the start and mostly the end are kept). offset skips that many lines; tail keeps only the last lines.",
    parameters: z.object({ id: commandId, offset: z.int().min(0).optional(), tail: z.int().min(1).max(10_000).optional() }).strict(),
    exposure: "direct",
    sideEffect: "read",
    parallel: true,
    async run(context, args) {
      const command = await context.commands.get(args.id);
      if (!command) return errorResult("unknown_command", `No background command ${args.id} in this session.`);
      let lines = command.output.split("\n");
      if (args.offset) lines = lines.slice(args.offset);
      if (args.tail) lines = lines.slice(-args.tail - 1);
      return textResult(`${describe(command)}\n${lines.join("\n")}`);
    },
  }),
  defineTool({
    name: "command_cancel",
    description: "Stop a background command and everything it started.",
    parameters: z.object({ id: commandId }).strict(),
    exposure: "direct",
    sideEffect: "exec",
    async run(context, args) {
      const command = await context.commands.cancel(args.id);
      if (!command) return errorResult("unknown_command", `No background command ${args.id} in this session.`);
      return textResult(command.status === "running" ? `Cancelling ${command.id}; check command_status.` : describe(command));
    },
  }),
];
