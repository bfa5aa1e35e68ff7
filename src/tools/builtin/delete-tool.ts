import { z } from "zod";
import { maxRecordedFileBytes, recordFileChange } from "../file-change.js";
import { defineTool, type FileChangeRecord } from "../tool.js";
import { doorRefusal, workspaceFailure } from "./workspace-failure.js";

/** Folders a model may not delete outside Full Access, nor anything inside them (SPEC F4). */
const protectedFolders = new Set([".git", ".agents", ".foya"]);
/** A folder bigger than this is refused: every file in it is recorded so that it can be restored. */
const maxRecordedFiles = 2000;

/** Why removing `path` is refused in this mode (F4), or null. */
function protectedReason(path: string, requested: string, mode: string): string | null {
  if (mode === "full_access") return null;
  const top = path.split("/")[0] ?? "";
  return protectedFolders.has(top) ? `"${requested}" is inside the protected folder ${top}.` : null;
}

/**
 * Moves a file or folder of the workspace to the project's trash; nothing is ever
 * deleted for good (SPEC F4). Every file removed is recorded as a file change
 * with its content, so a revert can bring it back. The workspace door decides
 * what is removed (a final symlink is removed, not its target; nothing outside
 * the workspace, in any mode); the protected folders are checked on the entry
 * the door actually removes.
 */
export const deleteTool = defineTool({
  name: "delete",
  description: "Delete a file or folder of the workspace by moving it to the trash. It can be restored by reverting the change.",
  parameters: z.object({ path: z.string().min(1).max(4096).describe("Path relative to the workspace root.") }).strict(),
  exposure: "direct",
  sideEffect: "write",
  reportsWorkspaceChanges: true,
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  async refusal(context, args) {
    const refused = await doorRefusal(() => context.workspace.check(args.path, "remove"));
    if (refused) return refused;
    // The protected folders, by where the path leads (a link inside to them counts).
    const at = await context.workspace.stat(args.path).catch(() => null);
    const reason = at ? protectedReason(at.path, args.path, context.approvalMode) : null;
    return reason
      ? { code: "protected_path", message: reason }
      : at?.path === "."
        ? { code: "protected_path", message: "The workspace root cannot be removed." }
        : null;
  },
  async run(context, args) {
    const refuse = (path: string): string | null => protectedReason(path, args.path, context.approvalMode);
    let outcome;
    try {
      outcome = await context.workspace.trash(args.path, { maxFiles: maxRecordedFiles, maxBytes: maxRecordedFileBytes, refuse });
    } catch (error) {
      return workspaceFailure(error);
    }
    const changes: FileChangeRecord[] = [];
    for (const file of outcome.files) changes.push(await recordFileChange(context, file.path, file.snapshot, { kind: "absent" }));
    const what = outcome.kind === "directory" ? `folder ${outcome.path} (${changes.length} files)` : outcome.path;
    const unkept = outcome.files.filter((file) => file.snapshot.kind === "digest").length;
    const note =
      unkept > 0
        ? ` ${unkept} of its files were too large to keep a copy of: reverting cannot bring ${unkept === 1 ? "it" : "them"} back (the project's trash still holds them).`
        : "";
    return {
      content: [{ type: "text", text: `Moved ${what} to the trash.${note}` }],
      displayDiff: changes.map((change) => change.diff).join(""),
      fileChanges: changes,
    };
  },
});
