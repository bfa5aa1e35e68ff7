import { z } from "zod";
import { displayDiff, maxRecordedFileBytes, recordFileChange } from "../file-change.js";
import { defineTool, errorResult, type FileChangeRecord, type ToolResult } from "../tool.js";
import { doorRefusal, workspaceFailure } from "./workspace-failure.js";

const editArguments = z
  .object({
    path: z.string().min(1).max(4096).describe("Path relative to the workspace root."),
    old_string: z.string().min(1).describe("The exact text to replace."),
    new_string: z.string().describe("The text to put in its place."),
    replace_all: z.boolean().describe("Replace every occurrence (default false).").optional(),
  })
  .strict();
type EditArgs = z.input<typeof editArguments>;

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** The edited text, or the is_error result the model gets; shared by run and the approval preview. */
function applyEdit(content: Buffer, args: EditArgs): { ok: true; updated: string; occurrences: number } | { ok: false; error: ToolResult } {
  if (content.includes(0)) return { ok: false, error: errorResult("binary_file", `"${args.path}" is a binary file; edit works on text.`) };
  if (args.old_string === args.new_string) return { ok: false, error: errorResult("no_change", "old_string and new_string are the same.") };
  const text = content.toString("utf8");
  let oldString = args.old_string;
  let newString = args.new_string;
  if (!text.includes(oldString) && text.includes("\r\n")) {
    // The file uses CRLF; the model almost always writes LF.
    oldString = oldString.replace(/\r?\n/g, "\r\n");
    newString = newString.replace(/\r?\n/g, "\r\n");
  }
  const occurrences = countOccurrences(text, oldString);
  if (occurrences === 0) {
    return {
      ok: false,
      error: errorResult("no_match", `old_string was not found in "${args.path}". Read the file and copy the text exactly.`),
    };
  }
  if (occurrences > 1 && !args.replace_all) {
    return {
      ok: false,
      error: errorResult(
        "ambiguous_match",
        `old_string occurs ${occurrences} times in "${args.path}". Add surrounding lines to make it unique, or set replace_all.`,
      ),
    };
  }
  const updated = args.replace_all ? text.split(oldString).join(newString) : text.replace(oldString, () => newString);
  return { ok: true, updated, occurrences };
}

/**
 * Exact string replacement in a text file. An ambiguous match is refused unless
 * `replace_all`; a file with CRLF line endings keeps them even when the model
 * wrote LF. The change is recorded like `write`'s (F1).
 */
export const editTool = defineTool({
  name: "edit",
  description:
    "Replace an exact string in a text file of the workspace. old_string must match exactly once unless replace_all is true; include enough surrounding lines to make it unique.",
  parameters: editArguments,
  exposure: "direct",
  sideEffect: "write",
  reportsWorkspaceChanges: true,
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  refusal: (context, args) => doorRefusal(() => context.workspace.check(args.path, "write")),
  async previewDiff(context, args) {
    const current = await context.workspace.snapshot(args.path, { maxBytes: maxRecordedFileBytes }).catch(() => null);
    if (current?.snapshot.kind !== "file") return null;
    const edited = applyEdit(current.snapshot.content, args);
    return edited.ok
      ? displayDiff(current.path, current.snapshot, { kind: "file", content: Buffer.from(edited.updated), mode: current.snapshot.mode })
      : null;
  },
  async run(context, args) {
    let occurrences = 0;
    let outcome;
    try {
      // Read, decide and write on one descriptor: the change recorded is the change made.
      outcome = await context.workspace.update<ToolResult, FileChangeRecord>(
        args.path,
        (before) => {
          if (before.kind === "absent")
            return { keep: errorResult("file_not_found", `No file at "${args.path}". Use write to create it.`) };
          if (before.kind === "digest")
            return { keep: errorResult("too_large", `"${args.path}" is ${before.size} bytes, too large to edit; write it whole instead.`) };
          const edited = applyEdit(before.content, args);
          if (!edited.ok) return { keep: edited.error };
          occurrences = edited.occurrences;
          return { write: Buffer.from(edited.updated) };
        },
        { maxBytes: maxRecordedFileBytes, createParents: false, ...(context.fileJournal ? { journal: context.fileJournal } : {}) },
      );
    } catch (error) {
      if (error instanceof Error && "code" in error && error.code === "not_a_directory")
        return errorResult("file_not_found", `No file at "${args.path}". Use write to create it.`);
      return workspaceFailure(error);
    }
    if (outcome.kind === "kept") return outcome.value;
    const change = outcome.placedWith ?? (await recordFileChange(context, outcome.path, outcome.before, outcome.after));
    const replaced = args.replace_all ? `${occurrences} occurrences` : "1 occurrence";
    return {
      content: [{ type: "text", text: `Edited ${outcome.path}: replaced ${replaced}.` }],
      displayDiff: change.diff,
      fileChanges: [change],
    };
  },
});
