import { constants, lstatSync, openSync, readdirSync } from "node:fs";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { closeQuietly, O_PATH, viaDescriptor } from "./descriptor-walk.js";

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
  const pending: Array<{ fd: number; prefix: string }> = [{ fd: openSync(root, O_PATH | constants.O_DIRECTORY), prefix: "" }];
  let folders = 0;
  try {
    while (pending.length > 0) {
      const { fd, prefix } = pending.pop() as { fd: number; prefix: string };
      try {
        if (truncated) continue;
        let names: string[];
        try {
          names = readdirSync(viaDescriptor(fd));
        } catch {
          continue;
        }
        for (const name of names) {
          if (entries.size >= options.maxEntries) {
            truncated = true;
            break;
          }
          const stats = lstatSync(viaDescriptor(fd, name), { throwIfNoEntry: false });
          if (!stats) continue;
          const at = prefix + name;
          const kind = stats.isFile() ? "file" : stats.isDirectory() ? "directory" : stats.isSymbolicLink() ? "symlink" : "other";
          entries.set(at, { kind, ino: stats.ino, size: stats.size, mode: stats.mode & 0o7777, mtimeMs: stats.mtimeMs });
          if (kind !== "directory" || summarizedNames.has(name)) continue;
          try {
            pending.push({
              fd: openSync(viaDescriptor(fd, name), O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW),
              prefix: `${at}/`,
            });
          } catch {
            // replaced meanwhile: its entry above is what there was
          }
        }
      } finally {
        closeQuietly(fd);
      }
      // A large tree is walked in slices: other jobs of this worker keep running.
      if (++folders % 100 === 0) await yieldToLoop();
    }
  } finally {
    for (const { fd } of pending) closeQuietly(fd);
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
