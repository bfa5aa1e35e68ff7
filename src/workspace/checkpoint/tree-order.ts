import { decodeByteText, isEscapedText } from "./byte-text.js";
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
    if (x === slash) return -1;
    if (y === slash) return 1;
    return x - y;
  }
  return a.length - b.length;
}

/**
 * `compareTreePaths` on the paths' texts. A text that is not escaped is
 * compared as it is, by code point (UTF-8's byte order is its code points'
 * order), so the common case decodes nothing.
 */
export function compareTreeKeys(a: string, b: string): number {
  if (isEscapedText(a) || isEscapedText(b)) return compareTreePaths(pathBytes(a), pathBytes(b));
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index++) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x === y) continue;
    if (x === slash) return -1;
    if (y === slash) return 1;
    return codePointOrder(x) - codePointOrder(y);
  }
  return a.length - b.length;
}

/** The entries as a tree in tree order; a later entry for the same path replaces an earlier one. */
export function sortedTree(entries: Iterable<TreeEntry>): Map<string, TreeEntry> {
  const byPath = new Map<string, TreeEntry>();
  for (const entry of entries) byPath.set(entry.path, entry);
  const sorted = [...byPath.values()].sort((x, y) => compareTreeKeys(x.path, y.path));
  return new Map(sorted.map((entry) => [entry.path, entry]));
}

/** The paths in tree order. */
export function sortedPaths(paths: Iterable<string>): string[] {
  return [...paths].sort(compareTreeKeys);
}

/**
 * A UTF-16 code unit's rank in code point order: surrogates (D800-DFFF, the
 * halves of code points above FFFF) after E000-FFFF.
 */
function codePointOrder(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

/** A path's bytes; a text that is not a byte text sorts by its UTF-8 (validation refuses it before anything is written). */
function pathBytes(path: string): Buffer {
  return decodeByteText(path) ?? Buffer.from(path, "utf8");
}

const slash = 0x2f;
