import { constants, fstatSync, openSync, readFileSync, type Stats } from "node:fs";
import { closeQuietly, O_PATH, viaDescriptor } from "../workspace/descriptor-walk.js";

const { O_NOFOLLOW, O_DIRECTORY } = constants;

/**
 * The file tree a started sandbox sees, read from the worker through its init's
 * `/proc/<pid>/root`: descriptors opened there belong to the sandbox's own mount
 * namespace, so a walk from it reaches only what the sandbox shows, through the
 * sandbox's own mounts. Each component is opened `O_PATH | O_NOFOLLOW` and must
 * be a real folder: a symlink (or anything else) where a folder was found stops
 * the walk, it is never followed.
 */
export interface SandboxTree {
  /**
   * The folder at `components` below `from` (the sandbox's root when null), held
   * open, or null when one of them is not a real folder now. The folders passed
   * on the way are closed again.
   */
  folder(from: number | null, components: readonly string[]): number | null;
  /** `name` in a held folder, as itself (a symlink is not followed), held open; null when absent. */
  entry(folder: number, name: string): { fd: number; stats: Stats } | null;
  /** What `name` in a held folder is, as itself, without holding it; null when absent. */
  stat(folder: number, name: string): Stats | null;
  /** Mount points of the sandbox, as paths inside it. */
  mountPoints(): Set<string>;
  /** Closes every descriptor this tree holds. */
  close(): void;
}

export function openSandboxTree(initPid: number): SandboxTree {
  const held = new Set<number>();
  const hold = (fd: number): number => {
    held.add(fd);
    return fd;
  };
  const drop = (fd: number) => {
    held.delete(fd);
    closeQuietly(fd);
  };
  const root = hold(openSync(`/proc/${initPid}/root`, O_PATH | O_DIRECTORY));
  const openEntry = (folder: number, name: string): number | null => {
    try {
      return openSync(viaDescriptor(folder, name), O_PATH | O_NOFOLLOW);
    } catch {
      return null;
    }
  };
  return {
    folder(from, components) {
      const start = from ?? root;
      let at = start;
      for (const name of components) {
        let next: number;
        try {
          next = openSync(viaDescriptor(at, name), O_PATH | O_NOFOLLOW | O_DIRECTORY);
        } catch {
          if (at !== start) closeQuietly(at);
          return null;
        }
        if (at !== start) closeQuietly(at);
        at = next;
      }
      return at === start && components.length === 0 ? start : hold(at);
    },
    entry(folder, name) {
      const fd = openEntry(folder, name);
      return fd === null ? null : { fd: hold(fd), stats: fstatSync(fd) };
    },
    stat(folder, name) {
      const fd = openEntry(folder, name);
      if (fd === null) return null;
      try {
        return fstatSync(fd);
      } finally {
        drop(fd);
      }
    },
    mountPoints() {
      const points = new Set<string>();
      for (const line of readFileSync(`/proc/${initPid}/mountinfo`, "utf8").split("\n")) {
        const point = line.split(" ")[4];
        // mountinfo writes space, tab, newline and backslash as octal escapes.
        if (point) points.add(point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))));
      }
      return points;
    },
    close() {
      for (const fd of held) closeQuietly(fd);
      held.clear();
    },
  };
}
