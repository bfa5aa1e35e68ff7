import { readdirSync, type Stats } from "node:fs";
import { timeSlices } from "../core/time-slices.js";
import { childPath, type EntryPath, rootPath, shownOf, viaDescriptorBytes } from "./entry-path.js";
import { type FolderHandles, openFolderHandles } from "./folder-handles.js";

/**
 * A workspace's manifest: every entry's kind, inode, size, mode and mtime,
 * walked from held descriptors and never through a symlink (SPEC S6). Two
 * manifests, one before a background command and one after it, say what it
 * changed (SPEC X7) where a layer cannot be used: the command works on the
 * workspace itself while other calls run. Folders named in `summarizedNames`
 * are not entered; a change inside them shows as their own mtime.
 */
export interface ManifestEntry {
  kind: "file" | "directory" | "symlink" | "other";
  ino: number;
  size: number;
  mode: number;
  mtimeMs: number;
}

export interface Manifest {
  entries: Map<string, ManifestEntry>;
  /** Stopped at `maxEntries`: the comparison is then partial, and says so. */
  truncated: boolean;
}

const summarizedNames = new Set([".git", "node_modules"]);

export async function takeManifest(root: string, options: { maxEntries: number }): Promise<Manifest> {
  const entries = new Map<string, ManifestEntry>();
  let truncated = false;
  // A bounded set of held folders, names as bytes: a workspace of 20,000 folders or of names that are not
  // UTF-8 is walked like any other, and a descriptor shortage makes the manifest partial, never the worker fail.
  let folders: FolderHandles;
  try {
    folders = openFolderHandles(root);
  } catch {
    return { entries, truncated: true };
  }
  const slices = timeSlices();
  const pending: EntryPath[] = [rootPath];
  try {
    while (pending.length > 0 && !truncated) {
      const folder = pending.pop() as EntryPath;
      let names: Buffer[];
      try {
        const fd = folders.folder(folder);
        if (fd === null) continue;
        names = readdirSync(viaDescriptorBytes(fd), { encoding: "buffer" });
      } catch {
        // unreadable, or descriptors exhausted: the comparison is partial, and says so
        truncated = true;
        break;
      }
      for (const name of names) {
        if (entries.size >= options.maxEntries) {
          truncated = true;
          break;
        }
        let stats: Stats | null;
        try {
          stats = folders.entry(folder, name);
        } catch {
          truncated = true;
          break;
        }
        if (!stats) continue;
        const entry = childPath(folder, name);
        const kind = stats.isFile() ? "file" : stats.isDirectory() ? "directory" : stats.isSymbolicLink() ? "symlink" : "other";
        entries.set(shownOf(entry), { kind, ino: stats.ino, size: stats.size, mode: stats.mode & 0o7777, mtimeMs: stats.mtimeMs });
        if (kind === "directory" && !summarizedNames.has(name.toString("latin1"))) pending.push(entry);
        if (slices.spent()) await slices.pause();
      }
    }
  } finally {
    folders.close();
  }
  return { entries, truncated };
}

export interface ManifestChanges {
  created: string[];
  modified: string[];
  deleted: string[];
  truncated: boolean;
}

/** Files and links created, modified (content, inode or mode) or deleted between two manifests; folders only by their summarized contents. */
export function compareManifests(before: Manifest, after: Manifest): ManifestChanges {
  const changes: ManifestChanges = { created: [], modified: [], deleted: [], truncated: before.truncated || after.truncated };
  const counts = (entry: ManifestEntry, at: string) => entry.kind !== "directory" || summarizedNames.has(at.slice(at.lastIndexOf("/") + 1));
  for (const [at, now] of after.entries) {
    if (!counts(now, at)) continue;
    const was = before.entries.get(at);
    if (!was) changes.created.push(at);
    else if (was.kind !== now.kind || was.ino !== now.ino || was.size !== now.size || was.mtimeMs !== now.mtimeMs || was.mode !== now.mode)
      changes.modified.push(at);
  }
  for (const [at, was] of before.entries) if (counts(was, at) && !after.entries.has(at)) changes.deleted.push(at);
  return changes;
}
