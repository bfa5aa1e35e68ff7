import { constants, lstatSync, openSync, type Stats } from "node:fs";
import { closeQuietly, O_PATH } from "./descriptor-walk.js";
import { type EntryPath, isAtOrBelow, rootPath, viaDescriptorBytes } from "./entry-path.js";

const { O_NOFOLLOW, O_DIRECTORY } = constants;

/**
 * The folders of a tree reached by descriptor (SPEC S6, X7): each folder is
 * opened `O_PATH | O_NOFOLLOW` from its parent's descriptor, one real folder
 * at a time, so a folder swapped for a symlink stops the walk instead of
 * leading it outside, and no path is ever longer than one name (a tree
 * thousands of levels deep is walked like a flat one).
 *
 * At most `maxHeld` descriptors are open, the root's and the most recently
 * used ones: a walk of 20,000 folders holds as few as a walk of one (a folder
 * per descriptor exhausted the process's limit, and the spawn that then met
 * EMFILE took the whole worker down). A folder that was let go is opened again
 * from its nearest held ancestor when it is needed.
 *
 * A descriptor answered by `folder` is valid until the next `folder` call on
 * the same handles; use it at once.
 */
export interface FolderHandles {
  /** The real folder at `entry`, or null when a name on the way is missing or not a real folder now. */
  folder(entry: EntryPath): number | null;
  /** The entry `name` in the folder at `parent`, as itself (a symlink is not followed); null when absent or unreachable. */
  entry(parent: EntryPath, name: Buffer): Stats | null;
  /** Drops the held folders at `entry` and below it (it was moved away). */
  forget(entry: EntryPath): void;
  /** Descriptors held now, the root's included. */
  readonly heldCount: number;
  close(): void;
}

/** Descriptors one set of handles holds at most, the root's included. */
const defaultMaxHeld = 32;

const isDescriptorShortage = (error: unknown) => {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "EMFILE" || code === "ENFILE";
};

export function openFolderHandles(root: string | number, options: { maxHeld?: number } = {}): FolderHandles {
  const maxHeld = Math.max(2, options.maxHeld ?? defaultMaxHeld);
  const rootFd = typeof root === "number" ? root : openSync(root, O_PATH | O_DIRECTORY);
  const ownsRoot = typeof root !== "number";
  /** Least recently used first (a Map keeps insertion order; a use moves an entry to the end). */
  const held = new Map<EntryPath, number>();

  const evictOne = () => {
    for (const [entry, fd] of held) {
      held.delete(entry);
      closeQuietly(fd);
      return true;
    }
    return false;
  };
  const openChild = (parentFd: number, name: Buffer): number | null => {
    for (let attempt = 0; ; attempt++) {
      try {
        return openSync(viaDescriptorBytes(parentFd, name), O_PATH | O_NOFOLLOW | O_DIRECTORY);
      } catch (error) {
        // Other work of this process holds the descriptors: give back ours (never the parent's) and try once more.
        if (isDescriptorShortage(error) && attempt === 0 && held.size > 1) {
          for (const [entry, fd] of held) {
            if (fd === parentFd || held.size <= 1) continue;
            held.delete(entry);
            closeQuietly(fd);
          }
          continue;
        }
        if (isDescriptorShortage(error)) throw error;
        return null;
      }
    }
  };
  const touch = (entry: EntryPath, fd: number) => {
    held.delete(entry);
    held.set(entry, fd);
  };

  const folder = (entry: EntryPath): number | null => {
    if (entry === rootPath || entry.depth === 0) return rootFd;
    const cached = held.get(entry);
    if (cached !== undefined) {
      touch(entry, cached);
      return cached;
    }
    // Up to the nearest held ancestor, then down, one name at a time.
    const chain: EntryPath[] = [];
    let fd = rootFd;
    for (let at: EntryPath | null = entry; at && at.depth > 0; at = at.parent) {
      const found = held.get(at);
      if (found !== undefined) {
        fd = found;
        break;
      }
      chain.push(at);
    }
    for (let index = chain.length - 1; index >= 0; index--) {
      const next = chain[index] as EntryPath;
      const opened = openChild(fd, next.name);
      if (opened === null) return null;
      // The parent's descriptor was used: it may go now if the set is full.
      while (held.size >= maxHeld - 1) evictOne();
      held.set(next, opened);
      fd = opened;
    }
    return fd;
  };

  return {
    folder,
    entry(parent, name) {
      const fd = folder(parent);
      if (fd === null) return null;
      return lstatSync(viaDescriptorBytes(fd, name), { throwIfNoEntry: false }) ?? null;
    },
    forget(entry) {
      const gone = new Set([entry]);
      for (const [at, fd] of held) {
        if (isAtOrBelow(at, gone)) {
          held.delete(at);
          closeQuietly(fd);
        }
      }
    },
    get heldCount() {
      return held.size + 1;
    },
    close() {
      for (const fd of held.values()) closeQuietly(fd);
      held.clear();
      if (ownsRoot) closeQuietly(rootFd);
    },
  };
}
