import { randomBytes } from "node:crypto";
import { constants, lstatSync, opendirSync, openSync, renameSync, rmdirSync, unlinkSync, type Dir } from "node:fs";
import path from "node:path";
import { closeQuietly, viaDescriptor } from "./descriptor-walk.js";

/**
 * Removes a tree for good, as root, while its owner's processes may still be
 * changing it (a deleted project's workspace and trash), in slices that never
 * hold the event loop for more than `sliceMs`: a tree of 726,000 entries once
 * blocked a whole API process for a minute.
 *
 * Every folder is opened `O_NOFOLLOW` and emptied through its descriptor, so a
 * folder swapped for a symlink meanwhile is removed as a link, never followed
 * out of the tree (a path-based `rm -rf` would follow it between its lstat and
 * its readdir). Folders found inside a folder are not descended into: they are
 * renamed, by descriptor, to the top of the tree and emptied from there in
 * turn, so any depth is removed holding two folders open, and the work can stop
 * after any slice and start again from whatever is left.
 */
export interface GradualRemoval {
  /** How long one slice may hold the event loop, in milliseconds. */
  sliceMs: number;
  /** Between slices, with the entries removed so far: a lease is renewed here; a throw stops the removal. */
  betweenSlices?: (removedSoFar: number) => Promise<void>;
  /** Stops the removal after the current slice (what is left stays for a later one). */
  signal?: AbortSignal;
}

/** Answers how many entries went; a missing tree is no error. */
export async function removeTreeGradually(target: string, options: GradualRemoval): Promise<number> {
  let parentFd: number;
  try {
    parentFd = openSync(path.dirname(target), constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    return 0;
  }
  const slices = sliceClock(options);
  try {
    const name = path.basename(target);
    const rootFd = openFolder(parentFd, name);
    if (rootFd === "gone") return 0;
    if (rootFd === "not_a_folder") return unlinkEntry(parentFd, name);
    let removed = 0;
    try {
      // The root itself goes last; a process still writing into it may have refilled it meanwhile.
      for (;;) {
        removed += await emptyTree(rootFd, slices);
        if (removeEmptyFolder(parentFd, name) === 1 || !lstatSync(viaDescriptor(parentFd, name), { throwIfNoEntry: false })) break;
      }
    } finally {
      closeQuietly(rootFd);
    }
    return removed + 1;
  } finally {
    closeQuietly(parentFd);
  }
}

interface SliceClock {
  /** Counts `removed` more entries; yields (and runs `betweenSlices`) once the current slice is spent; throws when aborted. */
  tick(removed: number): Promise<void>;
}

function sliceClock(options: GradualRemoval): SliceClock {
  let started = performance.now();
  let removedSoFar = 0;
  return {
    async tick(removed) {
      removedSoFar += removed;
      if (performance.now() - started < options.sliceMs) return;
      await new Promise((resolve) => setImmediate(resolve));
      options.signal?.throwIfAborted();
      await options.betweenSlices?.(removedSoFar);
      started = performance.now();
    },
  };
}

/**
 * Empties the folder held by `rootFd`: its files and links go, its folders are emptied one
 * by one (their own folders renamed up into the root first), then removed. Passes repeat
 * until the root is empty; a pass that removes nothing while something is left throws.
 */
async function emptyTree(rootFd: number, slices: SliceClock): Promise<number> {
  let removed = 0;
  for (;;) {
    let seen = 0;
    let removedInPass = 0;
    let stuck: unknown;
    const root = opendirSync(viaDescriptor(rootFd));
    try {
      for (let entry = root.readSync(); entry !== null; entry = root.readSync()) {
        seen++;
        let removed = 0;
        try {
          removed = entry.isDirectory() ? await emptyAndRemoveFolder(rootFd, entry.name, slices) : unlinkEntry(rootFd, entry.name);
        } catch (error) {
          // The file system's refusals are kept for when a pass makes no progress; anything else (an abort, a lost lease) stops the removal.
          if (!isSystemError(error)) throw error;
          stuck ??= error;
        }
        removedInPass += removed;
        // A folder's entries and the folder itself were counted by emptyAndRemoveFolder as they went.
        await slices.tick(entry.isDirectory() ? 0 : removed);
      }
    } finally {
      closeDir(root);
    }
    removed += removedInPass;
    if (seen === 0) return removed;
    if (removedInPass === 0) throw stuck ?? new Error("entries of the tree could not be removed");
  }
}

/** Empties one folder at the top of the tree, moving the folders inside it up, then removes it; counts each removal on the clock. */
async function emptyAndRemoveFolder(rootFd: number, name: string, slices: SliceClock): Promise<number> {
  const fd = openFolder(rootFd, name);
  if (fd === "gone") return 0;
  if (fd === "not_a_folder") {
    const unlinked = unlinkEntry(rootFd, name);
    await slices.tick(unlinked);
    return unlinked;
  }
  let removed = 0;
  try {
    const folder = opendirSync(viaDescriptor(fd));
    try {
      for (let entry = folder.readSync(); entry !== null; entry = folder.readSync()) {
        const unlinked = entry.isDirectory() ? moveUp(fd, entry.name, rootFd) : unlinkEntry(fd, entry.name);
        removed += unlinked;
        await slices.tick(unlinked);
      }
    } finally {
      closeDir(folder);
    }
  } finally {
    closeQuietly(fd);
  }
  const folderGone = removeEmptyFolder(rootFd, name);
  await slices.tick(folderGone);
  return removed + folderGone;
}

/** Opens a folder by name in a held folder without following a symlink. */
function openFolder(parentFd: number, name: string): number | "gone" | "not_a_folder" {
  try {
    return openSync(viaDescriptor(parentFd, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return "gone";
    // A symlink (ELOOP) or anything but a folder goes as what it is.
    if (code === "ELOOP" || code === "ENOTDIR") return "not_a_folder";
    throw error;
  }
}

/** Removes a non-folder entry; one that turned into a folder meanwhile is left for the next pass. */
function unlinkEntry(parentFd: number, name: string): number {
  try {
    unlinkSync(viaDescriptor(parentFd, name));
    return 1;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return 0;
    // unlink refuses a folder (EISDIR, or EPERM on Linux): it became one meanwhile, and the next pass empties it.
    if ((code === "EISDIR" || code === "EPERM") && lstatSync(viaDescriptor(parentFd, name), { throwIfNoEntry: false })?.isDirectory())
      return 0;
    throw error;
  }
}

/** Renames a folder, by descriptor, to a fresh name at the top of the tree: it is emptied from there. Removes nothing (0). */
function moveUp(fromFd: number, name: string, rootFd: number): 0 {
  for (let tries = 0; ; tries++) {
    try {
      renameSync(viaDescriptor(fromFd, name), viaDescriptor(rootFd, `.removing-${randomBytes(8).toString("hex")}`));
      return 0;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return 0;
      // The fresh name existed (EEXIST, ENOTEMPTY, ENOTDIR): another one.
      if (tries < 3 && (code === "EEXIST" || code === "ENOTEMPTY" || code === "ENOTDIR")) continue;
      throw error;
    }
  }
}

/** Removes a folder that should be empty now; one that filled again meanwhile waits for the next pass. */
function removeEmptyFolder(parentFd: number, name: string): number {
  try {
    rmdirSync(viaDescriptor(parentFd, name));
    return 1;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTEMPTY" || code === "EEXIST") return 0;
    // Swapped for a link or a file since it was emptied: it goes as what it is now.
    if (code === "ENOTDIR") return unlinkEntry(parentFd, name);
    throw error;
  }
}

function closeDir(dir: Dir): void {
  try {
    dir.closeSync();
  } catch {
    // Already closed: nothing to release.
  }
}

function isSystemError(error: unknown): boolean {
  return typeof (error as NodeJS.ErrnoException | null)?.syscall === "string";
}
