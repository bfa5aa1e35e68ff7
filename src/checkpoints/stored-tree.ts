import type { CheckpointStat, StoredChange, StoredEntry } from "../store/checkpoints.js";
import { sortedTree } from "../workspace/checkpoint/tree-order.js";
import type { FileStamp, TreeDelta, TreeEntries, TreeEntry } from "../workspace/checkpoint/tree-entry.js";

/**
 * Between the file system's tree (src/workspace/checkpoint) and the store's rows
 * (src/store/checkpoints.ts): the logical entry, with the capturing host's stamp for files.
 */
export function storedOf(entry: TreeEntry, stamp: FileStamp | undefined): StoredEntry {
  const stat = stamp ? statOf(stamp) : null;
  switch (entry.kind) {
    case "file":
      return { path: entry.path, kind: "file", mode: entry.mode, size: entry.size, sha256: entry.sha256, target: null, stat };
    case "directory":
      return { path: entry.path, kind: "directory", mode: entry.mode, size: 0, sha256: null, target: null, stat: null };
    case "symlink":
      return { path: entry.path, kind: "symlink", mode: 0o777, size: 0, sha256: null, target: entry.target, stat: null };
  }
}

/** The tree a checkpoint's rows describe, in tree order, and the stamps that let a capture on this host skip unchanged files. */
export function treeOfStored(stored: ReadonlyMap<string, StoredEntry>): { entries: TreeEntries; stamps: Map<string, FileStamp> } {
  const entries: TreeEntry[] = [];
  const stamps = new Map<string, FileStamp>();
  for (const row of stored.values()) {
    entries.push(entryOf(row));
    if (row.kind === "file" && row.stat) stamps.set(row.path, stampOf(row.stat, row.size));
  }
  return { entries: sortedTree(entries), stamps };
}

function entryOf(row: StoredEntry): TreeEntry {
  if (row.kind === "file") return { kind: "file", path: row.path, mode: row.mode, size: row.size, sha256: row.sha256 ?? "" };
  if (row.kind === "directory") return { kind: "directory", path: row.path, mode: row.mode };
  return { kind: "symlink", path: row.path, target: row.target ?? "" };
}

/** A delta as rows: what was added or changed, with stamps, and what went away. */
export function changesOf(delta: TreeDelta, stamps: ReadonlyMap<string, FileStamp>): StoredChange[] {
  return [
    ...delta.upserts.map((entry) => ({ removed: false as const, ...storedOf(entry, stamps.get(entry.path)) })),
    ...delta.removed.map((path) => ({ removed: true as const, path })),
  ];
}

function statOf(stamp: FileStamp): CheckpointStat {
  return { dev: String(stamp.dev), ino: String(stamp.ino), mtimeNs: String(stamp.mtimeNs), ctimeNs: String(stamp.ctimeNs) };
}

function stampOf(stat: CheckpointStat, size: number): FileStamp {
  return { dev: BigInt(stat.dev), ino: BigInt(stat.ino), size: BigInt(size), mtimeNs: BigInt(stat.mtimeNs), ctimeNs: BigInt(stat.ctimeNs) };
}
