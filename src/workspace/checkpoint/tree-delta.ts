import { timeSlices } from "../../core/time-slices.js";
import type { TreeDelta, TreeEntries, TreeEntry } from "./tree-entry.js";
import { compareTreeKeys, sortedPaths, sortedTree } from "./tree-order.js";

/**
 * Checkpoints as deltas (SPEC W1): a step's tree is its parent's with the
 * delta applied, so a checkpoint stores what changed, not the whole tree.
 * `applyDelta(a, await diffTrees(a, b))` equals `b`, order included.
 *
 * Both are linear and give the event loop turns: a tree is as large as a
 * tenant makes it (500,000 entries take about half a second each way).
 */
export async function diffTrees(previous: TreeEntries, next: TreeEntries, options: { signal?: AbortSignal } = {}): Promise<TreeDelta> {
  const turn = turns(options.signal);
  const upserts: TreeEntry[] = [];
  for (const entry of next.values()) {
    const was = previous.get(entry.path);
    // A capture shares the entries whose stamps did not move with `previous`.
    if (was !== entry && (!was || !sameEntry(was, entry))) upserts.push(entry);
    if (turn.due()) await turn.pause();
  }
  const removed: string[] = [];
  // When `previous` holds no more paths than those of `next` it shares, none went: no second pass.
  if (previous.size !== next.size - upserts.length + upserts.filter((entry) => previous.has(entry.path)).length)
    for (const path of previous.keys()) {
      if (!next.has(path)) removed.push(path);
      if (turn.due()) await turn.pause();
    }
  // `next` is in tree order already, and so are the removed paths, from `previous` (a sort of sorted paths is linear).
  return { upserts, removed: sortedPaths(removed) };
}

/** Linear in the base's size: the upserts are sorted and merged into the base, which is in tree order (a base out of order is sorted). */
export async function applyDelta(base: TreeEntries, delta: TreeDelta, options: { signal?: AbortSignal } = {}): Promise<TreeEntries> {
  const turn = turns(options.signal);
  const upserts = [...sortedTree(delta.upserts).values()];
  const replaced = new Set(delta.removed);
  for (const entry of upserts) replaced.add(entry.path);
  const merged = new Map<string, TreeEntry>();
  let previous: string | null = null;
  let inOrder = true;
  const keep = (entry: TreeEntry) => {
    if (previous !== null && compareTreeKeys(previous, entry.path) >= 0) inOrder = false;
    previous = entry.path;
    merged.set(entry.path, entry);
  };
  let next = 0;
  for (const entry of base.values()) {
    if (replaced.has(entry.path)) continue;
    while (next < upserts.length && compareTreeKeys((upserts[next] as TreeEntry).path, entry.path) < 0) keep(upserts[next++] as TreeEntry);
    keep(entry);
    if (!inOrder) break;
    if (turn.due()) await turn.pause();
  }
  while (inOrder && next < upserts.length) keep(upserts[next++] as TreeEntry);
  return inOrder ? merged : sortedTree([...base.values()].filter((entry) => !replaced.has(entry.path)).concat(upserts));
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

/** A turn of the event loop every so often, when the slice is spent; an abort is seen there. Asked per entry, so no promise unless due. */
function turns(signal: AbortSignal | undefined): { due(): boolean; pause(): Promise<void> } {
  const slices = timeSlices();
  let count = 0;
  return {
    due: () => ++count % 1024 === 0 && slices.spent(),
    async pause() {
      signal?.throwIfAborted();
      await slices.pause();
    },
  };
}

function unreachable(entry: never): never {
  throw new Error(`unknown tree entry ${JSON.stringify(entry)}`);
}
