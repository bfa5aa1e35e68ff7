import { constants, fstatSync, openSync } from "node:fs";
import { closeQuietly, O_PATH, viaDescriptor, type HeldEntry } from "./descriptor-walk.js";

/**
 * Whether a held folder is a git directory, told by its content rather than
 * its name: a `HEAD` file and an `objects` folder. This catches what a name
 * rule misses: a `.git` symlink to an ordinary-looking folder, a folder named
 * by a `.git` file's `gitdir:`, a bare repository.
 */
export function isGitFolder(folder: HeldEntry): boolean {
  return entryIs(folder, "HEAD", "file") && entryIs(folder, "objects", "directory");
}

function entryIs(folder: HeldEntry, name: string, kind: "file" | "directory"): boolean {
  let fd: number;
  try {
    fd = openSync(viaDescriptor(folder.fd, name), O_PATH | constants.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    const stats = fstatSync(fd);
    return kind === "file" ? stats.isFile() : stats.isDirectory();
  } finally {
    closeQuietly(fd);
  }
}
