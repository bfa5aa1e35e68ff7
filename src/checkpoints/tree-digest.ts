import { createHash } from "node:crypto";
import { compareTreeKeys } from "../workspace/checkpoint/tree-order.js";
import type { TreeDelta, TreeEntries, TreeEntry } from "../workspace/checkpoint/tree-entry.js";
import { parentPath } from "../workspace/checkpoint/tree-path.js";

/**
 * A tree's digest (SPEC W1) as a Merkle tree over its folders, so that a checkpoint that changed a
 * few entries recomputes the digests of their folders and those folders' parents only, not of the
 * whole tree. A folder's digest is the sha256 of `foya-tree-1` and, for each entry it holds in tree
 * order, the entry's logical line (a JSON array, as `legacyTreeDigest` writes it) and, for a
 * folder, that folder's digest: each item is one line, a JSON line never holds a newline and a
 * digest line is 64 hex digits, so the bytes hashed spell the tree one way only. The root's digest
 * is the tree's. Equal trees have equal digests wherever they were captured.
 */
export interface TreeIndex {
  /** Each folder's paths in tree order; `""` is the root. */
  children: ReadonlyMap<string, readonly string[]>;
  /** Each folder's digest; the root's is the tree's. */
  digests: ReadonlyMap<string, string>;
  /** Bytes of all files. */
  fileBytes: number;
}

const version = "foya-tree-1\n";
const root = "";

/** The digest of a whole tree, computed from scratch. */
export function treeDigest(entries: TreeEntries): string {
  return indexTree(entries).digests.get(root) as string;
}

/** Builds the index of a tree in tree order: linear, one hash per folder. */
export function indexTree(entries: TreeEntries): TreeIndex {
  const children = new Map<string, string[]>([[root, []]]);
  const folders: string[] = [root];
  let fileBytes = 0;
  for (const entry of entries.values()) {
    const parent = parentPath(entry.path);
    const siblings = children.get(parent);
    if (siblings) siblings.push(entry.path);
    else children.set(parent, [entry.path]);
    if (entry.kind === "directory") {
      folders.push(entry.path);
      if (!children.has(entry.path)) children.set(entry.path, []);
    } else if (entry.kind === "file") fileBytes += entry.size;
  }
  const digests = new Map<string, string>();
  // Reverse tree order: a folder's subfolders are digested before it.
  for (let index = folders.length - 1; index >= 0; index--) {
    const folder = folders[index] as string;
    digests.set(folder, folderDigest(entries, children.get(folder) ?? [], digests));
  }
  return { children, digests, fileBytes };
}

/**
 * The index of `entries`, which is `previous` with `delta` applied: only the folders holding a
 * changed entry, and their parents, are digested again. `delta.removed` lists every path that went,
 * those below a removed folder included (as `diffTrees` and the capture of changed paths give it).
 */
export function updateIndex(index: TreeIndex, previous: Pick<TreeEntries, "get">, entries: TreeEntries, delta: TreeDelta): TreeIndex {
  const children = new Map(index.children);
  const digests = new Map(index.digests);
  const copied = new Set<string>();
  const own = (folder: string): string[] => {
    const list = children.get(folder);
    if (copied.has(folder) && list) return list as string[];
    const copy = list ? [...list] : [];
    children.set(folder, copy);
    copied.add(folder);
    return copy;
  };
  const touched = new Set<string>();
  let fileBytes = index.fileBytes;
  for (const path of delta.removed) {
    const was = previous.get(path);
    if (was?.kind === "file") fileBytes -= was.size;
    if (was?.kind === "directory") {
      children.delete(path);
      digests.delete(path);
      copied.delete(path);
    }
    const parent = parentPath(path);
    if (!children.has(parent)) continue;
    const siblings = own(parent);
    const at = findPath(siblings, path);
    if (at.found) siblings.splice(at.index, 1);
    touched.add(parent);
  }
  for (const entry of delta.upserts) {
    const was = previous.get(entry.path);
    if (was?.kind === "file") fileBytes -= was.size;
    if (entry.kind === "file") fileBytes += entry.size;
    if (entry.kind === "directory") {
      if (!children.has(entry.path)) {
        children.set(entry.path, []);
        copied.add(entry.path);
      }
      touched.add(entry.path);
    } else if (was?.kind === "directory") {
      children.delete(entry.path);
      digests.delete(entry.path);
    }
    const parent = parentPath(entry.path);
    const siblings = own(parent);
    const at = findPath(siblings, entry.path);
    if (!at.found) siblings.splice(at.index, 0, entry.path);
    touched.add(parent);
  }
  // Every folder above a touched one is digested again, deepest first.
  for (const folder of [...touched]) {
    for (let up = folder; up !== root; ) {
      up = parentPath(up);
      touched.add(up);
    }
  }
  const order = [...touched].filter((folder) => children.has(folder)).sort((a, b) => depthOf(b) - depthOf(a));
  for (const folder of order) digests.set(folder, folderDigest(entries, children.get(folder) ?? [], digests));
  return { children, digests, fileBytes };
}

/** The digest the first checkpoints were written with: one sha256 over every entry's line. Kept to check their rows. */
export function legacyTreeDigest(entries: TreeEntries): string {
  const hash = createHash("sha256");
  for (const entry of sortedEntries(entries)) hash.update(`${entryLine(entry)}\n`);
  return hash.digest("hex");
}

/** Whether a tree adds up to the digest a checkpoint row holds (either construction). */
export function treeMatchesDigest(entries: TreeEntries, digest: string): boolean {
  return treeDigest(entries) === digest || legacyTreeDigest(entries) === digest;
}

function folderDigest(entries: TreeEntries, paths: readonly string[], digests: ReadonlyMap<string, string>): string {
  let text = version;
  for (const path of paths) {
    const entry = entries.get(path);
    if (!entry) continue;
    text += `${entryLine(entry)}\n`;
    if (entry.kind === "directory") text += `${digests.get(path) ?? ""}\n`;
  }
  return createHash("sha256").update(text).digest("hex");
}

function entryLine(entry: TreeEntry): string {
  const line =
    entry.kind === "file"
      ? ["f", entry.path, entry.mode, entry.size, entry.sha256]
      : entry.kind === "directory"
        ? ["d", entry.path, entry.mode]
        : ["l", entry.path, entry.target];
  return JSON.stringify(line);
}

function sortedEntries(entries: TreeEntries): TreeEntry[] {
  return [...entries.values()].sort((a, b) => compareTreeKeys(a.path, b.path));
}

function depthOf(path: string): number {
  if (path === root) return 0;
  let depth = 1;
  for (let index = path.indexOf("/"); index >= 0; index = path.indexOf("/", index + 1)) depth++;
  return depth;
}

/** Where `path` is, or would go, among siblings in tree order. */
function findPath(siblings: readonly string[], path: string): { found: boolean; index: number } {
  let low = 0;
  let high = siblings.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const order = compareTreeKeys(siblings[middle] as string, path);
    if (order === 0) return { found: true, index: middle };
    if (order < 0) low = middle + 1;
    else high = middle;
  }
  return { found: false, index: low };
}
