import { writeFile } from "node:fs/promises";
import { recordFileChange, snapshotFile } from "../file-change.js";
import { defineTool, errorResult } from "../tool.js";
import { resolveToolPath } from "./tool-path.js";

interface EditArgs {
  path: string;
  old_string: string;
  new_string: string;
  replace_all?: boolean;
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

/**
 * Exact string replacement in a text file. An ambiguous match is refused unless
 * `replace_all`; a file with CRLF line endings keeps them even when the model
 * wrote LF. The change is recorded like `write`'s (F1).
 */
export const editTool = defineTool<EditArgs>({
  name: "edit",
  description:
    "Replace an exact string in a text file of the workspace. old_string must match exactly once unless replace_all is true; include enough surrounding lines to make it unique.",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", minLength: 1, description: "Path relative to the workspace root." },
      old_string: { type: "string", minLength: 1, description: "The exact text to replace." },
      new_string: { type: "string", description: "The text to put in its place." },
      replace_all: { type: "boolean", description: "Replace every occurrence (default false)." },
    },
    required: ["path", "old_string", "new_string"],
    additionalProperties: false,
  },
  exposure: "direct",
  sideEffect: "write",
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  async run(context, args) {
    const resolved = await resolveToolPath(context, args.path);
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    let before;
    try {
      before = await snapshotFile(resolved.absolute);
    } catch {
      return errorResult("is_directory", `"${args.path}" is not a regular file.`);
    }
    if (before.kind === "absent") return errorResult("file_not_found", `No file at "${args.path}". Use write to create it.`);
    if (before.content.includes(0)) return errorResult("binary_file", `"${args.path}" is a binary file; edit works on text.`);
    if (args.old_string === args.new_string) return errorResult("no_change", "old_string and new_string are the same.");
    const text = before.content.toString("utf8");
    let oldString = args.old_string;
    let newString = args.new_string;
    if (!text.includes(oldString) && text.includes("\r\n")) {
      // The file uses CRLF; the model almost always writes LF.
      oldString = oldString.replace(/\r?\n/g, "\r\n");
      newString = newString.replace(/\r?\n/g, "\r\n");
    }
    const occurrences = countOccurrences(text, oldString);
    if (occurrences === 0) return errorResult("no_match", `old_string was not found in "${args.path}". Read the file and copy the text exactly.`);
    if (occurrences > 1 && !args.replace_all) {
      return errorResult(
        "ambiguous_match",
        `old_string occurs ${occurrences} times in "${args.path}". Add surrounding lines to make it unique, or set replace_all.`,
      );
    }
    const updated = args.replace_all ? text.split(oldString).join(newString) : text.replace(oldString, () => newString);
    try {
      await writeFile(resolved.absolute, updated, { signal: context.signal });
    } catch (error) {
      return errorResult("write_failed", `Could not write "${args.path}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    const change = await recordFileChange(context, resolved.relative, before, await snapshotFile(resolved.absolute));
    const replaced = args.replace_all ? `${occurrences} occurrences` : "1 occurrence";
    return {
      content: [{ type: "text", text: `Edited ${resolved.relative}: replaced ${replaced}.` }],
      displayDiff: change.diff,
      fileChanges: [change],
    };
  },
});
