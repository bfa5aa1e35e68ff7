import { decodeByteText } from "./byte-text.js";
import type { TreeEntries, TreeEntry } from "./tree-entry.js";
import { sortedTree } from "./tree-order.js";
import { joinNames, splitNames } from "./tree-path.js";

/**
 * A tree checked before a rebuild writes anything (SPEC W1): it may come from
 * the store, so every entry is checked for what the writes rely on: a path
 * that is a byte text of proper names, a parent that is a folder of the tree,
 * a mode within 0o7777, a file's size and sha256, a link's non-empty target.
 * The plan lists the entries in tree order (a folder before what it holds).
 */
export interface PlannedEntry {
  entry: TreeEntry;
  names: Buffer[];
  /** The parent folder's path; "" for the root. */
  parent: string;
}

export type TreePlan = { ok: true; entries: PlannedEntry[] } | { ok: false; path: string; message: string };

export function planTree(tree: TreeEntries): TreePlan {
  const planned: PlannedEntry[] = [];
  const folders = new Set<string>([""]);
  for (const [key, entry] of tree) if (key !== entry.path) return refused(key, "is listed under another path");
  for (const [key, entry] of sortedTree(tree.values())) {
    const names = splitNames(key);
    if (!names) return refused(key, "is not a path of proper names");
    const parent = names.length === 1 ? "" : joinNames(names.slice(0, -1));
    if (!folders.has(parent)) return refused(key, "has no folder above it in the tree");
    const problem = fieldProblem(entry);
    if (problem) return refused(key, problem);
    if (entry.kind === "directory") folders.add(key);
    planned.push({ entry, names, parent });
  }
  return { ok: true, entries: planned };
}

function fieldProblem(entry: TreeEntry): string | null {
  switch (entry.kind) {
    case "directory":
      return validMode(entry.mode) ? null : "has a mode outside 0o7777";
    case "file":
      if (!validMode(entry.mode)) return "has a mode outside 0o7777";
      if (!Number.isSafeInteger(entry.size) || entry.size < 0) return "has no valid size";
      return /^[0-9a-f]{64}$/.test(entry.sha256) ? null : "has no valid sha256";
    case "symlink": {
      const target = decodeByteText(entry.target);
      return target && target.length > 0 ? null : "has no valid target";
    }
    default:
      return `has an unknown kind ${JSON.stringify((entry as { kind: unknown }).kind)}`;
  }
}

const validMode = (mode: number) => Number.isInteger(mode) && mode >= 0 && mode <= 0o7777;

function refused(path: string, why: string): TreePlan {
  return { ok: false, path, message: `The tree's entry ${JSON.stringify(path)} ${why}.` };
}
