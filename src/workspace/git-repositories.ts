import { constants, fstatSync, openSync, readdirSync } from "node:fs";
import { closeQuietly, holdRoot, O_PATH, viaDescriptor, type HeldEntry } from "./descriptor-walk.js";

/**
 * Where the repositories of a workspace keep their git metadata, nested ones
 * included (SPEC S11): every folder named `.git`, and every `.git` file (a
 * worktree's or submodule's pointer). The sandbox binds what runs code in
 * them read-only for each call, so this runs before every sandboxed process
 * and must cost little: it remembers each folder's listing with the folder's
 * inode and modification time, and lists again only the folders that changed
 * (an entry added, removed or renamed changes its folder's mtime). A call
 * then costs one `O_PATH` open and one fstat per folder, not a listing.
 *
 * Like the door, it walks from held descriptors and never follows a link;
 * node_modules is not searched (its packages' repositories are not the
 * workspace's). At most `maxFolders` folders are looked at, down to `maxDepth`
 * levels: past either, the answer says so (`truncated`), and the sandbox
 * refuses the call rather than leave a repository it did not see writable.
 */
export interface GitRepositories {
  /** Paths inside the workspace of `.git` folders and of `.git` files; `truncated` says which bound stopped the search, if one did. */
  find(workspaceRoot: string): { gitFolders: string[]; gitFiles: string[]; truncated: "depth" | "folders" | null };
}

interface FolderListing {
  ino: bigint;
  mtimeNs: bigint;
  /** Subfolders to search (not `.git`, not node_modules, not links). */
  folders: string[];
  hasGitFolder: boolean;
  hasGitFile: boolean;
}

const skipped = new Set(["node_modules"]);
const maxWorkspaces = 256;
/** Folders deeper than this are not searched: the walk holds one descriptor per level. */
export const maxGitSearchDepth = 64;

export function createGitRepositories(options: { maxFolders?: number } = {}): GitRepositories {
  const maxFolders = options.maxFolders ?? 20_000;
  /** Per workspace root, per folder path inside it ("" for the root). */
  const listings = new Map<string, Map<string, FolderListing>>();

  return {
    find(workspaceRoot) {
      let known = listings.get(workspaceRoot);
      if (!known) {
        if (listings.size >= maxWorkspaces) listings.delete(listings.keys().next().value as string);
        known = new Map();
        listings.set(workspaceRoot, known);
      }
      const seen = new Set<string>();
      const found: ReturnType<GitRepositories["find"]> = { gitFolders: [], gitFiles: [], truncated: null };
      const root = holdRoot(workspaceRoot);
      const visit = (folder: HeldEntry, at: string, depth: number): void => {
        if (depth > maxGitSearchDepth) {
          found.truncated ??= "depth";
          return;
        }
        if (seen.size >= maxFolders) {
          found.truncated ??= "folders";
          return;
        }
        seen.add(at);
        const stats = fstatSync(folder.fd, { bigint: true });
        let listing = known.get(at);
        if (!listing || listing.ino !== stats.ino || listing.mtimeNs !== stats.mtimeNs) {
          listing = list(folder, stats.ino, stats.mtimeNs);
          known.set(at, listing);
        }
        const prefix = at === "" ? "" : `${at}/`;
        if (listing.hasGitFolder) found.gitFolders.push(`${prefix}.git`);
        if (listing.hasGitFile) found.gitFiles.push(`${prefix}.git`);
        for (const name of listing.folders) {
          let fd: number;
          try {
            fd = openSync(viaDescriptor(folder.fd, name), O_PATH | constants.O_NOFOLLOW | constants.O_DIRECTORY);
          } catch {
            continue; // gone, or replaced by a link or a file since it was listed
          }
          try {
            visit({ fd, stats: folder.stats, components: [] }, `${prefix}${name}`, depth + 1);
          } finally {
            closeQuietly(fd);
          }
        }
      };
      try {
        visit(root, "", 0);
      } finally {
        closeQuietly(root.fd);
      }
      // Folders gone since the last call leave the memory with them.
      for (const at of known.keys()) if (!seen.has(at)) known.delete(at);
      return found;
    },
  };
}

function list(folder: HeldEntry, ino: bigint, mtimeNs: bigint): FolderListing {
  const listing: FolderListing = { ino, mtimeNs, folders: [], hasGitFolder: false, hasGitFile: false };
  for (const entry of readdirSync(viaDescriptor(folder.fd), { withFileTypes: true })) {
    if (entry.name === ".git") {
      if (entry.isDirectory()) listing.hasGitFolder = true;
      else listing.hasGitFile = true;
    } else if (entry.isDirectory() && !skipped.has(entry.name)) {
      listing.folders.push(entry.name);
    }
  }
  return listing;
}
