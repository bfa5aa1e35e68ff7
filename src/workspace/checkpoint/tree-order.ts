import { decodeByteText } from "./byte-text.js";
import type { TreeEntry } from "./tree-entry.js";

/**
 * The order of a tree's entries (SPEC W1): paths compared name by name, each
 * name by its bytes. A folder comes before what it holds and a parent's
 * siblings after all of it (`a`, `a/b`, `a-c`), which is the byte order with
 * `/` counted below every byte a name can hold. The same tree always lists,
 * and so serializes and rebuilds, in the same order.
 */
export function compareTreePaths(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index++) {
    const x = a[index] as number;
    const y = b[index] as number;
    if (x === y) continue;
    if (x === 0x2f) return -1;
    if (y === 0x2f) return 1;
    return x - y;
  }
  return a.length - b.length;
}

/** The entries as a tree in tree order; a later entry for the same path replaces an earlier one. */
export function sortedTree(entries: Iterable<TreeEntry>): Map<string, TreeEntry> {
  const byPath = new Map<string, TreeEntry>();
  for (const entry of entries) byPath.set(entry.path, entry);
  const keyed = [...byPath.values()].map((entry) => ({ entry, bytes: pathBytes(entry.path) }));
  keyed.sort((x, y) => compareTreePaths(x.bytes, y.bytes));
  return new Map(keyed.map(({ entry }) => [entry.path, entry]));
}

/** The paths in tree order. */
export function sortedPaths(paths: Iterable<string>): string[] {
  const keyed = [...paths].map((path) => ({ path, bytes: pathBytes(path) }));
  keyed.sort((x, y) => compareTreePaths(x.bytes, y.bytes));
  return keyed.map(({ path }) => path);
}

/** A path's bytes; a text that is not a byte text sorts by its UTF-8 (validation refuses it before anything is written). */
function pathBytes(path: string): Buffer {
  return decodeByteText(path) ?? Buffer.from(path, "utf8");
}
