import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, lstatSync, mkdirSync, renameSync } from "node:fs";
import path from "node:path";
import { removeTreeGradually } from "../remove-tree.js";
import { materializeTree, type MaterializeOptions } from "./materialize.js";
import type { TreeEntries } from "./tree-entry.js";
import { verifyTree } from "./verify-tree.js";

/**
 * A workspace folder rebuilt from a tree (SPEC W1): written into a fresh sibling folder
 * (`<workspace>.rebuild-<random>`, 0700), checked against the tree by capturing it again, and
 * only then renamed into place, so no call ever sees a half-written workspace. A folder that
 * reappeared meanwhile (another worker rebuilt it first) is left as it is.
 */
export type RebuildResult =
  | { kind: "rebuilt"; files: number; folders: number; symlinks: number; refusedLinks: number }
  | { kind: "already_present" }
  | { kind: "failed"; message: string };

export function workspaceFolderPresent(workspaceDir: string): boolean {
  try {
    return lstatSync(workspaceDir).isDirectory();
  } catch {
    return false;
  }
}

/** A missing workspace with nothing to rebuild it from starts empty, as a new project's does (0700, the tenant's). */
export function createEmptyWorkspaceFolder(workspaceDir: string, owner: { uid: number; gid: number } | null): void {
  mkdirSync(path.dirname(workspaceDir), { recursive: true, mode: 0o711 });
  try {
    mkdirSync(workspaceDir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return;
    throw error;
  }
  if (owner) chownSync(workspaceDir, owner.uid, owner.gid);
}

export async function rebuildWorkspaceFolder(
  workspaceDir: string,
  tree: TreeEntries,
  options: Pick<MaterializeOptions, "blob" | "blobsAhead" | "uid" | "gid" | "signal">,
): Promise<RebuildResult> {
  const staging = `${workspaceDir}.rebuild-${randomBytes(6).toString("hex")}`;
  mkdirSync(path.dirname(workspaceDir), { recursive: true, mode: 0o711 });
  mkdirSync(staging, { mode: 0o700 });
  try {
    const written = await materializeTree(staging, tree, options);
    if (!written.ok) return { kind: "failed", message: `${written.error} at ${written.path ?? "the root"}: ${written.message}` };
    const except = new Set(written.refused.map((link) => link.path));
    const verified = await verifyTree(staging, tree, { except, ...(options.signal ? { signal: options.signal } : {}) });
    if (!verified.ok) return { kind: "failed", message: `the rebuilt folder differs from the checkpoint in ${verified.count} entries` };
    if (options.uid !== undefined && options.gid !== undefined) chownSync(staging, options.uid, options.gid);
    chmodSync(staging, 0o700);
    if (workspaceFolderPresent(workspaceDir)) return { kind: "already_present" };
    try {
      renameSync(staging, workspaceDir);
    } catch (error) {
      // Another worker's rebuild landed between the check and the rename: the folder is there.
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOTEMPTY" || code === "EEXIST") return { kind: "already_present" };
      throw error;
    }
    return { kind: "rebuilt", files: written.files, folders: written.folders, symlinks: written.symlinks, refusedLinks: except.size };
  } finally {
    // Nothing is left behind: after the rename there is no staging folder to remove.
    if (workspaceFolderPresent(staging)) await removeTreeGradually(staging, { sliceMs: 50 });
  }
}

/**
 * Moves a damaged workspace folder out of the way so the rebuild can take its place: renamed to a
 * sibling (one rename, so no call sees a half-moved folder), removed once the rebuild stands.
 */
export function setWorkspaceFolderAside(workspaceDir: string): string {
  const aside = `${workspaceDir}.damaged-${randomBytes(6).toString("hex")}`;
  renameSync(workspaceDir, aside);
  return aside;
}

export async function removeFolderAside(aside: string): Promise<void> {
  await removeTreeGradually(aside, { sliceMs: 50 });
}
