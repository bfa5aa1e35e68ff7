import { sameEntry } from "./tree-delta.js";
import { captureTree } from "./tree-capture.js";
import type { TreeEntries, TreeEntry } from "./tree-entry.js";

/**
 * Whether a folder holds exactly a tree (SPEC W1): captured again, every
 * logical field compared (kind, mode, size, digest, target), nothing missing
 * and nothing more. Links a rebuild refused are left out of the comparison by
 * passing them in `except`.
 */
export type TreeVerification =
  | { ok: true }
  /** `count` counts every difference, `differences` lists the first 100; `partial`: the folder held more than the tree and 100 entries besides, which were not looked at. */
  | { ok: false; count: number; differences: TreeDifference[]; partial: boolean };

/** `expected` null: found but not in the tree; `found` null: in the tree but not found. */
export interface TreeDifference {
  path: string;
  expected: TreeEntry | null;
  found: TreeEntry | null;
}

/** Differences listed at most (all are counted). */
const maxListed = 100;

export async function verifyTree(
  target: string,
  tree: TreeEntries,
  options: { except?: ReadonlySet<string>; signal?: AbortSignal } = {},
): Promise<TreeVerification> {
  const found = await captureTree(target, { maxEntries: tree.size + maxListed, signal: options.signal });
  const except = options.except ?? new Set<string>();
  const differences: TreeDifference[] = [];
  let count = 0;
  const differ = (path: string, expected: TreeEntry | null, actual: TreeEntry | null) => {
    count++;
    if (differences.length < maxListed) differences.push({ path, expected, found: actual });
  };
  for (const [path, expected] of tree) {
    if (except.has(path)) continue;
    const actual = found.entries.get(path) ?? null;
    if (!actual || !sameEntry(expected, actual)) differ(path, expected, actual);
  }
  for (const [path, actual] of found.entries) if (!tree.has(path)) differ(path, null, actual);
  // FIFOs, sockets and devices a tree never holds; one in the tree's place was counted as missing above.
  for (const skipped of found.skipped) if (!tree.has(skipped.path)) differ(skipped.path, null, null);
  return count === 0 && !found.truncated ? { ok: true } : { ok: false, count, differences, partial: found.truncated };
}
