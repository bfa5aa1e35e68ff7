import path from "node:path";
import { FoyaError, notFound } from "../errors.js";
import { maxRecordedFileBytes, sha256 } from "../store/blobs.js";
import type { Store, StoreTx } from "../store/store.js";
import { projectWorkspaceFiles } from "../workspace/project-workspace.js";
import { isWorkspaceError, type WorkspaceFiles } from "../workspace/workspace-files.js";
import type { FileChangeRow } from "../store/file-changes.js";
import type { HostFolder } from "./host-folder.js";
import type { FileChangeId, ProjectId, TenantId } from "../ids.js";

export type { FileChangeRow };

/**
 * Reverts one file change, or it and every later change of its session
 * (SPEC F3), newest first. Before touching anything it checks that each file
 * is exactly as the change left it (or as the next newer revert will leave
 * it); any difference refuses the whole revert with a conflict, so a revert
 * never overwrites work done since. Content and mode come back from the blob
 * store; a file the change created goes to the trash.
 *
 * Every file is reached through the workspace door (S6): a path that now
 * leads outside the workspace (a parent folder swapped for a symlink, say) is
 * a conflict, never followed; each file is checked again on the descriptor it
 * is written through, and restored modes never carry setuid or setgid.
 *
 * Reverts of one session take turns (D11): each runs in a transaction holding
 * the session's revert lock, and reads whether its change is still unreverted
 * only once it holds it. Of racing reverts of one change, exactly one reverts;
 * the others answer 409 with the change's current state.
 *
 * It runs on the host the project is placed on (SPEC W3), asked by the API (src/hosts/): `workspace`
 * is that host's copy of the project's workspace, and the change must be of `input.projectId`.
 */
export async function revertFileChanges(
  store: Store,
  workspace: HostFolder,
  input: { tenantId: TenantId; projectId: ProjectId; changeId: FileChangeId; andLater: boolean },
): Promise<FileChangeRow[]> {
  const owned = await store.fileChanges.fileChangeSessionOfTenant(input.tenantId, input.changeId);
  if (!owned || owned.projectId !== input.projectId) throw notFound("file change");
  return store.transaction(async (tx) => {
    await tx.fileChanges.lockSessionReverts(owned.sessionId);
    return revertLocked(tx, workspace, input);
  });
}

async function revertLocked(
  tx: StoreTx,
  host: HostFolder,
  input: { tenantId: TenantId; projectId: ProjectId; changeId: FileChangeId; andLater: boolean },
): Promise<FileChangeRow[]> {
  const target = await tx.fileChanges.fileChangeWithWorkspace(input.tenantId, input.changeId);
  if (!target || target.projectId !== input.projectId) throw notFound("file change");
  if (target.change.revertedAt) {
    throw new FoyaError("conflict", `file change ${target.change.id} was already reverted at ${target.change.revertedAt.toISOString()}`, {
      current: { id: target.change.id, revertedAt: target.change.revertedAt.toISOString() },
    });
  }
  const chosen = input.andLater
    ? await tx.fileChanges.unrevertedChangesSince(target.change.sessionId, target.change.createdAt)
    : [target.change];
  // A change recorded but not made (SPEC X7) has nothing to undo: it is marked reverted and the workspace is left alone.
  const changes = chosen.filter((change) => change.notApplied === null);

  const workspace = projectWorkspaceFiles(host.workspacesDir, host.workspaceDir);
  const refused = (change: FileChangeRow, why: string) => new FoyaError("conflict", `${change.path}: ${why}; the revert was refused`);
  /**
   * Changes made in Full Access before the workspace door kept every tool inside may name absolute
   * paths, under the folder the project had then (its recorded one) or under this host's.
   */
  const locate = (change: FileChangeRow): string => {
    if (!path.isAbsolute(change.path)) return change.path;
    for (const folder of [host.workspaceDir, target.workspacePath]) {
      const inside = path.relative(folder, change.path);
      if (!inside.startsWith("..") && !path.isAbsolute(inside)) return inside || ".";
    }
    throw new FoyaError("conflict", `file change ${change.id} points outside its workspace`);
  };

  // Check everything first: the expected digest of each path as the reverts proceed.
  const expected = new Map<string, string | null>();
  for (const change of changes) {
    const where = locate(change);
    // A folder on the way that is gone means the file is absent: the same as its digest being null.
    const key = await workspace.locate(where).catch((error: unknown) => {
      if (isWorkspaceError(error) && error.code === "file_not_found") return null;
      throw refused(change, isWorkspaceError(error) ? error.message : String(error));
    });
    if (key === null) {
      if (change.sha256After !== null)
        throw new FoyaError(
          "conflict",
          `${change.path} changed since file change ${change.id}; the revert was refused and nothing was touched`,
        );
      continue;
    }
    if (!expected.has(key)) expected.set(key, await digestNow(workspace, where, change, refused));
    if (expected.get(key) !== change.sha256After) {
      throw new FoyaError(
        "conflict",
        `${change.path} changed since file change ${change.id}; the revert was refused and nothing was touched`,
      );
    }
    expected.set(key, change.sha256Before);
  }
  const contents = new Map<string, Buffer>();
  for (const change of changes) {
    if (change.sha256Before && !contents.has(change.sha256Before)) {
      const blob = await tx.blobs.getBlob(input.tenantId, change.sha256Before);
      // A version too large to keep was recorded by its digest only.
      if (!blob)
        throw new FoyaError(
          "conflict",
          `${change.path}: its content before change ${change.id} was too large to keep, so this change cannot be reverted (a deleted file is in the project's trash: GET /v1/projects/:id/trash)`,
        );
      contents.set(change.sha256Before, blob);
    }
  }

  for (const change of changes) await restore(workspace, locate(change), change, contents, refused);
  return tx.fileChanges
    .markFileChangesReverted(chosen.map((change) => change.id))
    .then((rows) => rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()));
}

type Refuse = (change: FileChangeRow, why: string) => FoyaError;

async function digestNow(workspace: WorkspaceFiles, where: string, change: FileChangeRow, refused: Refuse): Promise<string | null> {
  try {
    const { snapshot } = await workspace.snapshot(where, { maxBytes: maxRecordedFileBytes });
    return snapshot.kind === "file" ? sha256(snapshot.content) : null;
  } catch (error) {
    if (isWorkspaceError(error) && error.code !== "io_failed") throw refused(change, error.message);
    throw error;
  }
}

/** Puts one file back as it was before `change`, checking on the same descriptor that it is still as the change left it. */
async function restore(
  workspace: WorkspaceFiles,
  where: string,
  change: FileChangeRow,
  contents: Map<string, Buffer>,
  refused: Refuse,
): Promise<void> {
  try {
    if (change.sha256Before === null) {
      if ((await workspace.stat(where)) !== null) await workspace.trash(where, { maxFiles: 1, maxBytes: maxRecordedFileBytes });
      return;
    }
    const content = contents.get(change.sha256Before) as Buffer;
    const outcome = await workspace.update(
      where,
      (current) => {
        const now = current.kind === "file" ? sha256(current.content) : null;
        if (now !== change.sha256After) return { keep: "changed" as const };
        return { write: content, ...(change.modeBefore !== null ? { mode: change.modeBefore } : {}) };
      },
      { maxBytes: maxRecordedFileBytes },
    );
    if (outcome.kind === "kept") throw new FoyaError("conflict", `${change.path} changed while the revert ran; it was left as it is`);
  } catch (error) {
    if (isWorkspaceError(error)) throw refused(change, error.message);
    throw error;
  }
}
