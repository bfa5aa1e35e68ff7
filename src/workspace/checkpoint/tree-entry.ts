/**
 * A workspace's tree as a checkpoint keeps it (SPEC W1): every entry, `.git`
 * and `node_modules` included, with what rebuilding it needs and nothing that
 * depends on the host (no inode, owner or timestamp).
 *
 * Paths and symlink targets are byte texts (`byte-text.ts`): the text itself
 * when the bytes are valid UTF-8, an escaped form marked `%bytes:` otherwise,
 * so every name the kernel allows is kept exactly and every value is a JSON-
 * and Postgres-safe string. Paths are relative to the workspace root, names
 * joined by `/`, never `.` or `..`.
 */
export type TreeEntry = FileEntry | FolderEntry | LinkEntry;

export interface FileEntry {
  kind: "file";
  path: string;
  /** Permission bits as stat gives them, setuid, setgid and sticky included (`mode & 0o7777`). */
  mode: number;
  /** Bytes. */
  size: number;
  /** Lower-case hex sha256 of the content: the blob's address in the store. */
  sha256: string;
}

export interface FolderEntry {
  kind: "directory";
  path: string;
  mode: number;
}

/**
 * A symlink is kept as its target, never followed. Its own mode is not kept:
 * Linux gives every link 0777 and has no lchmod.
 */
export interface LinkEntry {
  kind: "symlink";
  path: string;
  /** The target as the link holds it, a byte text. */
  target: string;
}

/**
 * A logical tree keyed by path. Iteration order is part of the contract: a
 * folder before what it holds, siblings by the bytes of their names
 * (`tree-order.ts`), so two equal trees serialize alike.
 */
export type TreeEntries = ReadonlyMap<string, TreeEntry>;

/**
 * The stat fields that let the next capture trust a file's digest without
 * reading it: equal device, inode, size, mtime and ctime mean the same content
 * (ctime cannot be set by a process, so a rewrite that restores the mtime is
 * still seen). Host-local: a tree rebuilt elsewhere is hashed again once.
 * Nanoseconds as bigint, as `stat` gives them.
 */
export interface FileStamp {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/** An entry the capture did not keep, and why. */
export type SkippedEntry =
  /** FIFOs, sockets and devices: recorded, never opened. */
  | { path: string; reason: "special"; type: "fifo" | "socket" | "character_device" | "block_device" }
  /**
   * A file with more than one hard link that the workspace's owner does not
   * own: the other link may be outside, and copying it into a checkpoint would
   * hand its content to the tenant on a rebuild.
   */
  | { path: string; reason: "hard_link" };

export interface CapturedTree {
  entries: TreeEntries;
  /**
   * Stamps of the files whose digest may be reused next time. A file changed
   * within `racyWindowNs` of being read is left out (its next change could keep
   * the same timestamps), so it is simply read again.
   */
  stamps: ReadonlyMap<string, FileStamp>;
  /** One file for each digest that `previous` did not have: the blobs to store (read them with `readCapturedFile`). */
  fresh: FileEntry[];
  skipped: SkippedEntry[];
  /** Files read and hashed by this capture (the others reused a previous digest). */
  hashed: number;
  /** Stopped at `maxEntries`: the tree is partial and must not be kept as a checkpoint. */
  truncated: boolean;
}

/** What turns one tree into another: entries added or changed (whole), and paths removed. Both in tree order. */
export interface TreeDelta {
  upserts: TreeEntry[];
  removed: string[];
}

export const emptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
