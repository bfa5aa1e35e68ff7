import type { FileChange } from "@foya/client";
import { exitCodes } from "../exit-codes.js";
import { formatDiff } from "../format-diff.js";
import type { Output } from "../output.js";
import type { Command } from "./command.js";
import { argument, booleanOption } from "./option-values.js";

export const changesCommand: Command = {
  name: "changes",
  summary: "List a session's file changes, oldest first (A added, M modified, D deleted)",
  arguments: [{ name: "SESSION" }],
  options: {},
  async run(input) {
    const client = await input.client();
    const changes = await client.fileChanges.list(argument(input, 0));
    const { output } = input;
    if (output.json) output.document(changes);
    else if (changes.length === 0) output.line(output.style.dim("no file changes"));
    else for (const change of changes) printChange(output, change);
    return exitCodes.ok;
  },
};

export const diffCommand: Command = {
  name: "diff",
  summary: "Show one file change as a unified diff",
  arguments: [{ name: "CHANGE" }],
  options: {},
  async run(input) {
    const client = await input.client();
    const change = await client.fileChanges.get(argument(input, 0));
    const { output } = input;
    if (output.json) output.document(change);
    else output.write(ensureNewline(formatDiff(change.diff, output.style)));
    return exitCodes.ok;
  },
};

export const revertCommand: Command = {
  name: "revert",
  summary: "Put a file back as it was before a change",
  details: [
    "With --and-later, this change and every later one of its session, newest first.",
    "A file changed since, or a change already reverted, is refused and nothing is touched.",
  ],
  arguments: [{ name: "CHANGE" }],
  options: {
    "and-later": { type: "boolean", description: "also revert every later change of the session" },
  },
  async run(input) {
    const client = await input.client();
    const reverted = await client.fileChanges.revert(argument(input, 0), { andLater: booleanOption(input, "and-later") });
    const { output } = input;
    if (output.json) {
      output.document(reverted);
      return exitCodes.ok;
    }
    output.line(`reverted ${reverted.length} change${reverted.length === 1 ? "" : "s"}`);
    for (const change of reverted) printChange(output, change);
    return exitCodes.ok;
  },
};

function printChange(output: Output, change: FileChange): void {
  const { style } = output;
  const kind = !change.existedBefore ? style.green("A") : change.sha256After === null ? style.red("D") : style.yellow("M");
  const reverted = change.revertedAt ? style.dim("  (reverted)") : "";
  output.line(`${style.bold(change.id)}  ${kind} ${change.path}${reverted}  ${style.dim(change.createdAt)}`);
}

function ensureNewline(text: string): string {
  return text.length === 0 || text.endsWith("\n") ? text : `${text}\n`;
}
