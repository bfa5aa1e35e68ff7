import { constants, lstatSync, openSync, readdirSync, rmdirSync, unlinkSync } from "node:fs";
import path from "node:path";
import { closeQuietly, viaDescriptor } from "./descriptor-walk.js";

/**
 * Removes a tree for good, as root, while its owner's processes may still be
 * changing it (a deleted project's workspace and trash): every folder is
 * opened `O_NOFOLLOW` and emptied through its descriptor, so a folder swapped
 * for a symlink meanwhile is removed as a link, never followed out of the
 * tree (a path-based `rm -rf` would follow it between its lstat and its
 * readdir). Answers how many entries went; a missing tree is no error.
 */
export function removeTree(target: string): number {
  const parent = path.dirname(target);
  let parentFd: number;
  try {
    parentFd = openSync(parent, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    return 0;
  }
  try {
    return removeEntry(parentFd, path.basename(target));
  } finally {
    closeQuietly(parentFd);
  }
}

function removeEntry(folderFd: number, name: string): number {
  const at = viaDescriptor(folderFd, name);
  const stats = lstatSync(at, { throwIfNoEntry: false });
  if (!stats) return 0;
  if (!stats.isDirectory()) {
    unlinkSync(at);
    return 1;
  }
  let fd: number;
  try {
    fd = openSync(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    // Swapped for a symlink or a file since the lstat: it goes as what it is now.
    if ((error as NodeJS.ErrnoException).code === "ELOOP" || (error as NodeJS.ErrnoException).code === "ENOTDIR")
      return removeEntry(folderFd, name);
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  let removed = 0;
  try {
    for (const child of readdirSync(viaDescriptor(fd))) removed += removeEntry(fd, child);
  } finally {
    closeQuietly(fd);
  }
  rmdirSync(at);
  return removed + 1;
}
