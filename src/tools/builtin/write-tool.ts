import { z } from "zod";
import { displayDiff, maxRecordedFileBytes, recordFileChange } from "../file-change.js";
import { defineTool } from "../tool.js";
import { doorRefusal, workspaceFailure } from "./workspace-failure.js";

/** Creates or replaces a text file; the change is recorded with both contents (F1) and a display diff (F2). */
export const writeTool = defineTool({
  name: "write",
  description: "Write a text file in the project workspace, creating parent folders; replaces the file if it exists.",
  parameters: z
    .object({
      path: z.string().min(1).max(4096).describe("Path relative to the workspace root."),
      content: z.string().describe("The complete new content of the file."),
    })
    .strict(),
  exposure: "direct",
  sideEffect: "write",
  reportsWorkspaceChanges: true,
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  refusal: (context, args) => doorRefusal(() => context.workspace.check(args.path, "write")),
  async previewDiff(context, args) {
    const current = await context.workspace.snapshot(args.path, { maxBytes: maxRecordedFileBytes }).catch(() => null);
    if (!current) return null;
    const mode = current.snapshot.kind === "file" ? current.snapshot.mode : 0o644;
    return displayDiff(current.path, current.snapshot, { kind: "file", content: Buffer.from(args.content), mode });
  },
  async run(context, args) {
    const content = Buffer.from(args.content);
    let outcome;
    try {
      // A file too large to keep is replaced all the same, recorded by its digest only (it cannot be reverted).
      outcome = await context.workspace.update(args.path, () => ({ write: content }), {
        maxBytes: maxRecordedFileBytes,
        larger: "digest",
        ...(context.fileJournal ? { journal: context.fileJournal } : {}),
      });
    } catch (error) {
      return workspaceFailure(error);
    }
    if (outcome.kind === "kept") throw new Error("write never keeps a file as it is");
    const change = outcome.placedWith ?? (await recordFileChange(context, outcome.path, outcome.before, outcome.after));
    const verb = outcome.before.kind === "absent" ? "Created" : "Updated";
    const note =
      outcome.before.kind === "digest"
        ? ` The old version (${outcome.before.size} bytes) was too large to keep: this change cannot be reverted.`
        : "";
    return {
      content: [{ type: "text", text: `${verb} ${outcome.path} (${content.length} bytes).${note}` }],
      displayDiff: change.diff,
      fileChanges: [change],
    };
  },
});
