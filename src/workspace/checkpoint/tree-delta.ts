import type { TreeDelta, TreeEntries, TreeEntry } from "./tree-entry.js";
import { sortedPaths, sortedTree } from "./tree-order.js";

/**
 * Checkpoints as deltas (SPEC W1): a step's tree is its parent's with the
 * delta applied, so a checkpoint stores what changed, not the whole tree.
 * `applyDelta(a, diffTrees(a, b))` equals `b`, order included.
 */
export function diffTrees(previous: TreeEntries, next: TreeEntries): TreeDelta {
  const upserts: TreeEntry[] = [];
  for (const [path, entry] of next) {
    const was = previous.get(path);
    if (!was || !sameEntry(was, entry)) upserts.push(entry);
  }
  const removed: string[] = [];
  for (const path of previous.keys()) if (!next.has(path)) removed.push(path);
  // `next` is in tree order already; the removed paths come from `previous`, in its order.
  return { upserts, removed: sortedPaths(removed) };
}

export function applyDelta(base: TreeEntries, delta: TreeDelta): TreeEntries {
  const gone = new Set(delta.removed);
  const kept = [...base.values()].filter((entry) => !gone.has(entry.path));
  return sortedTree([...kept, ...delta.upserts]);
}

/** Whether two entries are the same in every logical field. */
export function sameEntry(a: TreeEntry, b: TreeEntry): boolean {
  if (a.path !== b.path) return false;
  switch (a.kind) {
    case "file":
      return b.kind === "file" && a.mode === b.mode && a.size === b.size && a.sha256 === b.sha256;
    case "directory":
      return b.kind === "directory" && a.mode === b.mode;
    case "symlink":
      return b.kind === "symlink" && a.target === b.target;
    default:
      return unreachable(a);
  }
}

function unreachable(entry: never): never {
  throw new Error(`unknown tree entry ${JSON.stringify(entry)}`);
}
