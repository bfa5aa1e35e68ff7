import { chownSync, constants, fstatSync, lchownSync, lstatSync, openSync, opendirSync, type Dirent } from "node:fs";
import { open } from "node:fs/promises";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { closeQuietly, O_PATH, viaDescriptor, type HeldEntry } from "./descriptor-walk.js";
import { digestOf, readBounded } from "./held-file.js";
import { WorkspaceError, type WalkOptions, type WalkOutcome } from "./workspace-files.js";

const { O_NOFOLLOW, O_DIRECTORY, O_RDONLY, O_NONBLOCK, O_NOCTTY } = constants;
/** Folders deeper than this are not entered: a walk holds one descriptor per level. */
const maxDepth = 128;
/** Entries handled between two yields to the event loop, so a huge tree never stalls a worker. */
const entriesPerSlice = 256;
const defaultMaxEntries = 100_000;

/** What reading a walked file gave: its bytes, or why it was passed over. */
export type TreeRead =
  | { kind: "read"; content: Buffer; mode: number }
  /** A file over the size asked for, when asked to digest rather than skip it. */
  | { kind: "digest"; sha256: string; size: number; mode: number }
  | { kind: "skipped"; reason: "too_large" | "hard_link" | "special" | "gone" };

/** A file or symlink met by `walkTree`, readable from the folder descriptor the walk holds. */
export interface TreeFile {
  /** Path relative to the folder the walk started from. */
  path: string;
  kind: "file" | "symlink";
  /** The file whole up to `maxBytes`; past it skipped, or (`larger: "digest"`) known by its digest only. */
  read(maxBytes: number, larger?: "skip" | "digest"): Promise<TreeRead>;
}

/**
 * Walks a held folder depth-first, never following a symlink, entries sorted
 * by name within each folder. Folders are opened from their parent's
 * descriptor (`O_PATH | O_NOFOLLOW | O_DIRECTORY`), so a folder swapped for a
 * link mid-walk is skipped, never entered.
 */
export async function walkTree(
  start: HeldEntry,
  options: WalkOptions,
  visit: (file: TreeFile) => void | Promise<void>,
): Promise<WalkOutcome> {
  const maxEntries = options.maxEntries ?? defaultMaxEntries;
  const outcome: WalkOutcome = { visited: 0, truncated: false, cancelled: false };
  const stopped = () => outcome.truncated || outcome.cancelled;

  const walkFolder = async (folder: HeldEntry, prefix: string, depth: number): Promise<void> => {
    for (const entry of readEntries(folder)) {
      if (stopped()) return;
      if (options.signal?.aborted) {
        outcome.cancelled = true;
        return;
      }
      if (outcome.visited >= maxEntries) {
        outcome.truncated = true;
        return;
      }
      outcome.visited++;
      if (outcome.visited % entriesPerSlice === 0) await yieldToLoop();
      const relative = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
      const kind = entryKind(folder, entry);
      if (kind === "directory") {
        if (options.skipFolders?.has(entry.name) || (options.enter && !options.enter(relative, relative))) continue;
        if (depth >= maxDepth) {
          outcome.truncated = true;
          continue;
        }
        const child = openChildFolder(folder, entry.name);
        if (child === null) continue;
        try {
          await walkFolder({ ...child, components: [...folder.components, entry.name] }, relative, depth + 1);
        } finally {
          closeQuietly(child.fd);
        }
      } else if (kind === "file" || kind === "symlink") {
        // A visitor that does not wait costs no microtask per entry.
        const visited = visit({
          path: relative,
          kind,
          read: (maxBytes, larger = "skip") => readChild(folder, entry.name, maxBytes, larger),
        });
        if (visited) await visited;
      }
    }
  };
  await walkFolder(start, "", 0);
  return outcome;
}

function readEntries(folder: HeldEntry): Dirent[] {
  const entries: Dirent[] = [];
  const directory = opendirSync(viaDescriptor(folder.fd), { bufferSize: 256 });
  try {
    for (let entry = directory.readSync(); entry !== null; entry = directory.readSync()) entries.push(entry);
  } finally {
    directory.closeSync();
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The entry's kind from the directory listing; when the file system does not say, from an `O_PATH` look. */
function entryKind(folder: HeldEntry, entry: Dirent): "file" | "directory" | "symlink" | "special" | "gone" {
  if (entry.isFile()) return "file";
  if (entry.isDirectory()) return "directory";
  if (entry.isSymbolicLink()) return "symlink";
  if (entry.isFIFO() || entry.isSocket() || entry.isCharacterDevice() || entry.isBlockDevice()) return "special";
  let fd: number;
  try {
    fd = openSync(viaDescriptor(folder.fd, entry.name), O_PATH | O_NOFOLLOW);
  } catch {
    return "gone";
  }
  try {
    const stats = fstatSync(fd);
    return stats.isFile() ? "file" : stats.isDirectory() ? "directory" : stats.isSymbolicLink() ? "symlink" : "special";
  } finally {
    closeQuietly(fd);
  }
}

function openChildFolder(folder: HeldEntry, name: string): Omit<HeldEntry, "components"> | null {
  try {
    const fd = openSync(viaDescriptor(folder.fd, name), O_PATH | O_NOFOLLOW | O_DIRECTORY);
    return { fd, stats: fstatSync(fd) };
  } catch {
    // Replaced by a link or removed since the listing: not entered.
    return null;
  }
}

/** Reads a regular file with one link from a held folder, without following a link; anything else is skipped. */
async function readChild(folder: HeldEntry, name: string, maxBytes: number, larger: "skip" | "digest"): Promise<TreeRead> {
  let fd: number;
  try {
    fd = openSync(viaDescriptor(folder.fd, name), O_PATH | O_NOFOLLOW);
  } catch {
    return { kind: "skipped", reason: "gone" };
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { kind: "skipped", reason: "special" };
    if (stats.nlink > 1) return { kind: "skipped", reason: "hard_link" };
    if (stats.size > maxBytes && larger === "skip") return { kind: "skipped", reason: "too_large" };
    const handle = await open(viaDescriptor(fd), O_RDONLY | O_NONBLOCK | O_NOCTTY);
    try {
      if (stats.size > maxBytes) return { kind: "digest", ...(await digestOf(handle)), mode: stats.mode & 0o7777 };
      return { kind: "read", content: await readBounded(handle, maxBytes, name), mode: stats.mode & 0o7777 };
    } catch (error) {
      if (error instanceof WorkspaceError && error.code === "too_large") return { kind: "skipped", reason: "too_large" };
      throw error;
    } finally {
      await handle.close();
    }
  } finally {
    closeQuietly(fd);
  }
}

/**
 * Gives every entry below a held folder, and the folder, to `owner`, without
 * following a link (lchown from the parent's descriptor). For workspaces made
 * before tool processes stepped down from root: their files belong to root.
 */
export async function chownTree(start: HeldEntry, owner: { uid: number; gid: number }): Promise<number> {
  let changed = 0;
  const chownFolder = async (folder: HeldEntry, depth: number): Promise<void> => {
    for (const entry of readEntries(folder)) {
      const at = viaDescriptor(folder.fd, entry.name);
      // A file with another link may be a host file linked in by root: it is not the tenant's to get.
      if (!entry.isDirectory() && lstatSync(at).nlink > 1) continue;
      lchownSync(at, owner.uid, owner.gid);
      if (++changed % entriesPerSlice === 0) await yieldToLoop();
      if (entryKind(folder, entry) !== "directory" || depth >= maxDepth) continue;
      const child = openChildFolder(folder, entry.name);
      if (child === null) continue;
      try {
        await chownFolder({ ...child, components: [...folder.components, entry.name] }, depth + 1);
      } finally {
        closeQuietly(child.fd);
      }
    }
  };
  await chownFolder(start, 0);
  chownSync(viaDescriptor(start.fd), owner.uid, owner.gid);
  return changed + 1;
}
