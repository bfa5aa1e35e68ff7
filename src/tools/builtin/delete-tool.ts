import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import trash from "trash";
import { recordFileChange, snapshotFile } from "../file-change.js";
import { defineTool, errorResult, type FileChangeRecord, type ToolContext } from "../tool.js";
import { resolveToolPath } from "./tool-path.js";

interface DeleteArgs {
  path: string;
}

/** Folders a model may not delete outside Full Access, nor anything inside them (SPEC F4). */
const protectedFolders = new Set([".git", ".agents", ".foya"]);
/** A folder bigger than this is refused: every file in it is recorded so that it can be restored. */
const maxRecordedFiles = 2000;
const maxRecordedBytes = 64 * 1024 * 1024;

/**
 * Moves a file or folder to the OS trash; nothing is ever deleted for good
 * (SPEC F4). Every file removed is recorded as a file change with its content,
 * so a revert can bring it back.
 */
export const deleteTool = defineTool<DeleteArgs>({
  name: "delete",
  description: "Delete a file or folder of the workspace by moving it to the trash. It can be restored by reverting the change.",
  parameters: {
    type: "object",
    properties: { path: { type: "string", minLength: 1, description: "Path relative to the workspace root." } },
    required: ["path"],
    additionalProperties: false,
  },
  exposure: "direct",
  sideEffect: "write",
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  async run(context, args) {
    const resolved = await resolveToolPath(context, args.path, { followFinalLink: false });
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    if (resolved.absolute === path.parse(resolved.absolute).root) return errorResult("protected_path", "The file-system root can never be removed.");
    if (context.approvalMode !== "full_access") {
      if (resolved.relative === ".") return errorResult("protected_path", "The workspace root cannot be deleted.");
      const top = resolved.relative.split(path.sep)[0] ?? "";
      if (protectedFolders.has(top)) return errorResult("protected_path", `"${args.path}" is inside the protected folder ${top}.`);
    }
    let stat;
    try {
      stat = await lstat(resolved.absolute);
    } catch {
      return errorResult("file_not_found", `Nothing exists at "${args.path}".`);
    }
    let changes: FileChangeRecord[];
    try {
      changes = stat.isDirectory() ? await recordFolder(context, resolved.absolute, resolved.relative) : await recordOne(context, resolved.absolute, resolved.relative);
    } catch (error) {
      return errorResult("delete_refused", (error as Error).message);
    }
    try {
      await trash([resolved.absolute], { glob: false });
    } catch (error) {
      return errorResult("trash_failed", `Could not move "${args.path}" to the trash: ${(error as Error).message}`);
    }
    const what = stat.isDirectory() ? `folder ${resolved.relative} (${changes.length} files)` : resolved.relative;
    return {
      content: [{ type: "text", text: `Moved ${what} to the trash.` }],
      displayDiff: changes.map((change) => change.diff).join(""),
      fileChanges: changes,
    };
  },
});

async function recordOne(context: Pick<ToolContext, "blobs">, absolute: string, relative: string): Promise<FileChangeRecord[]> {
  const stat = await lstat(absolute);
  if (!stat.isFile()) return []; // a symbolic link or special file: trashed, not recorded
  return [await recordFileChange(context, relative, await snapshotFile(absolute), { kind: "absent" })];
}

async function recordFolder(context: Pick<ToolContext, "blobs">, absolute: string, relative: string): Promise<FileChangeRecord[]> {
  const files: string[] = [];
  let bytes = 0;
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) {
        files.push(full);
        bytes += (await lstat(full)).size;
        if (files.length > maxRecordedFiles || bytes > maxRecordedBytes) {
          throw new Error(`"${relative}" is too large to delete recoverably (over ${maxRecordedFiles} files or ${maxRecordedBytes / 1024 / 1024} MiB); delete smaller parts.`);
        }
      }
    }
  };
  await walk(absolute);
  const changes: FileChangeRecord[] = [];
  for (const file of files) changes.push(...(await recordOne(context, file, path.join(relative, path.relative(absolute, file)))));
  return changes;
}
