import { constants, lstatSync, openSync, type Stats } from "node:fs";
import { closeQuietly, O_PATH, viaDescriptor } from "../../workspace/descriptor-walk.js";

const { O_NOFOLLOW, O_DIRECTORY } = constants;

/**
 * Folders of a workspace held open by descriptor, reached one real folder at
 * a time and never through a symlink (SPEC S6): the root worker applies a
 * call's changes to a tree the tenant's other processes may be changing, so a
 * folder swapped for a symlink meanwhile stops the walk instead of leading it
 * outside. Entries are then named as `/proc/self/fd/<fd>/<name>`.
 */
export interface StrictFolders {
  /** The folder at `components`, or null when one of them is missing or not a real folder now. */
  folder(components: readonly string[]): number | null;
  /** The entry `name` in a held folder, as itself (a symlink is not followed). */
  entry(folderFd: number, name: string): Stats | null;
  /** Drops the held folder at `components` and those below it (it was moved away). */
  forget(components: readonly string[]): void;
  close(): void;
}

export function openStrictFolders(rootPath: string): StrictFolders {
  const rootFd = openSync(rootPath, O_PATH | O_DIRECTORY);
  const held = new Map<string, number>([["", rootFd]]);
  const open = (components: readonly string[]): number | null => {
    const key = components.join("/");
    const cached = held.get(key);
    if (cached !== undefined) return cached;
    const parent = open(components.slice(0, -1));
    if (parent === null) return null;
    try {
      const fd = openSync(viaDescriptor(parent, components[components.length - 1] as string), O_PATH | O_NOFOLLOW | O_DIRECTORY);
      held.set(key, fd);
      return fd;
    } catch {
      return null;
    }
  };
  return {
    folder: open,
    entry(folderFd, name) {
      return lstatSync(viaDescriptor(folderFd, name), { throwIfNoEntry: false }) ?? null;
    },
    forget(components) {
      const key = components.join("/");
      for (const [held_, fd] of held) {
        if (held_ !== "" && (held_ === key || held_.startsWith(`${key}/`))) {
          closeQuietly(fd);
          held.delete(held_);
        }
      }
    },
    close() {
      for (const fd of held.values()) closeQuietly(fd);
      held.clear();
    },
  };
}
