import { FoyaError, notFound } from "../errors.js";
import { dropTrashRecord, findTrashEntry, listTrashPage, projectTrashRoot, type TrashEntry } from "../workspace/project-trash.js";
import { projectWorkspaceFiles } from "../workspace/project-workspace.js";
import { isWorkspaceError } from "../workspace/workspace-files.js";
import type { HostFolder } from "./host-folder.js";

/**
 * A project's trash as the API answers it (SPEC F4), read and restored on the host that holds the
 * project's workspace and trash (SPEC W3): `<root>/.trash/<tenant>/<project>` beside the folder.
 */
export interface TrashEntryWire {
  id: string;
  path: string;
  kind: TrashEntry["kind"];
  bytes: number | null;
  deletedAt: string;
}

export interface TrashPageWire {
  entries: TrashEntryWire[];
  next: string | null;
}

/** One page of the trash, newest first (`listTrashPage`). */
export async function listProjectTrash(host: HostFolder, page: { limit: number; after?: string | undefined }): Promise<TrashPageWire> {
  const trash = projectTrashRoot(host.workspacesDir, host.workspaceDir);
  const listed = await listTrashPage(trash, host.workspaceDir, page);
  return { entries: listed.entries.map((entry) => ({ ...entry, deletedAt: entry.deletedAt.toISOString() })), next: listed.next };
}

/**
 * Puts an entry back where it was, through the workspace door: 404 for no such entry; 409 when
 * something is at its path again or its folder is gone; 400 for a path the door refuses.
 */
export async function restoreProjectTrashEntry(host: HostFolder, entryId: string): Promise<{ path: string }> {
  const trash = projectTrashRoot(host.workspacesDir, host.workspaceDir);
  const entry = await findTrashEntry(trash, host.workspaceDir, entryId);
  if (!entry) throw notFound("trash entry");
  const workspace = projectWorkspaceFiles(host.workspacesDir, host.workspaceDir);
  try {
    const restored = await workspace.restoreFromTrash(entry.path, entry.hostPath);
    // The entry is back: its record goes too.
    await dropTrashRecord(entry);
    return { path: restored.path };
  } catch (error) {
    if (isWorkspaceError(error)) {
      const conflict = error.code === "already_exists" || error.code === "file_not_found" || error.code === "not_a_directory";
      throw new FoyaError(conflict ? "conflict" : "bad_request", error.message);
    }
    throw error;
  }
}
