import { childPath, type EntryPath, rootPath } from "../entry-path.js";
import { openFolderHandles } from "../folder-handles.js";
import { decodeByteText, isEscapedText } from "./byte-text.js";
import { type CaptureRun, captureEntry, startRun, walk } from "./tree-capture.js";
import { sameEntry } from "./tree-delta.js";
import type { CapturedTree, FileStamp, TreeDelta, TreeEntries, TreeEntry } from "./tree-entry.js";
import { compareTreeKeys, sortedPaths } from "./tree-order.js";
import { parentPath, splitNames } from "./tree-path.js";

/**
 * The next capture of a workspace from the paths that changed since `previous` (SPEC W1): only
 * those are looked at, with the same steps as `captureTree` (folders held by descriptor, never
 * through a symlink; a file's digest reused while its stamp has not moved), and applied to
 * `previous`. A changed path is taken whole, with everything under it when it is a folder now;
 * each folder on its way is looked at as an entry (a write may have made it, a chmod changed it).
 *
 * Sound only when nothing but what reported these paths changed the folder since `previous` was
 * captured: the caller decides that (`src/checkpoints/take-checkpoint.ts`). `doubt` when the paths
 * cannot be taken as given (a path that is no tree path, a capture past `maxEntries`): the caller
 * then walks the whole tree.
 */
export type ChangedCapture =
  | {
      kind: "captured";
      captured: CapturedTree;
      delta: TreeDelta;
      /** What the changed paths held before (`previous`'s entries, as they were even when updated in place). */
      before: Pick<TreeEntries, "get">;
    }
  | { kind: "doubt"; reason: string };

/** What the update needs of the previous tree beside its entries: each folder's paths (`TreeIndex.children`). */
export type FolderListing = ReadonlyMap<string, readonly string[]>;

export async function captureChangedPaths(
  root: string,
  previous: CapturedTree,
  listing: FolderListing,
  changed: Iterable<string>,
  options: {
    maxEntries?: number;
    signal?: AbortSignal;
    /**
     * `previous` may be updated in place when no path is new (the common batch: files rewritten):
     * a copy of a 10,000-entry tree costs more than the rest of the update. The caller must hold
     * no other use of `previous` then.
     */
    reusePrevious?: boolean;
  } = {},
): Promise<ChangedCapture> {
  const targets = targetsOf(changed);
  if (targets === null) return { kind: "doubt", reason: "a changed path is not a tree path" };
  const folders = openFolderHandles(root);
  try {
    const run = startRun(folders, { previous, ...options }, "path");
    // Taken whole: a path gone, or captured with everything under it. What lies under one comes right after it in tree order.
    const rootsTaken: string[] = [];
    const paths = new EntryPaths();
    for (const [path, how] of targets) {
      const lastTaken = rootsTaken[rootsTaken.length - 1];
      if (lastTaken !== undefined && isBelow(path, lastTaken)) continue;
      const at = paths.of(path);
      const folder = await captureEntry(run, at);
      if (!folder) rootsTaken.push(path);
      else if (how === "tree" || previous.entries.get(path)?.kind !== "directory") {
        if (await walk(run, at)) return { kind: "doubt", reason: "the changed folders hold too many entries" };
        rootsTaken.push(path);
      }
    }
    const delta = deltaOf(previous.entries, listing, run, rootsTaken);
    if (options.reusePrevious !== true)
      return { kind: "captured", captured: nextCapture(previous, run, delta), delta, before: previous.entries };
    const added = delta.upserts.filter((entry) => !previous.entries.has(entry.path));
    // New paths need their places in tree order: the entries are copied (the stamps still updated in place).
    if (added.length > 0)
      return { kind: "captured", captured: withAddedPaths(previous, run, delta, added), delta, before: previous.entries };
    const replaced = new Map(
      [...delta.upserts.map((entry) => entry.path), ...delta.removed].map((path) => [path, previous.entries.get(path)]),
    );
    const before = { get: (path: string) => (replaced.has(path) ? replaced.get(path) : previous.entries.get(path)) };
    return { kind: "captured", captured: updatedCapture(previous, run, delta), delta, before };
  } finally {
    folders.close();
  }
}

/** Each changed path (taken whole) and every folder above one (taken as an entry), in tree order; null for a path that is none. */
function targetsOf(changed: Iterable<string>): Map<string, "tree" | "entry"> | null {
  const how = new Map<string, "tree" | "entry">();
  for (const path of changed) {
    if (splitNames(path) === null) return null;
    how.set(path, "tree");
    for (let up = parentPath(path); up !== ""; up = parentPath(up)) if (!how.has(up)) how.set(up, "entry");
  }
  const ordered = new Map<string, "tree" | "entry">();
  for (const path of sortedPaths(how.keys())) ordered.set(path, how.get(path) as "tree" | "entry");
  return ordered;
}

/** Entry paths that share their parents, so the folder handles find the folders they hold. */
class EntryPaths {
  private readonly known = new Map<string, EntryPath>([["", rootPath]]);
  of(path: string): EntryPath {
    const found = this.known.get(path);
    if (found) return found;
    const names = splitNames(path) as Buffer[];
    const at = childPath(this.of(parentPath(path)), names[names.length - 1] as Buffer);
    this.known.set(path, at);
    return at;
  }
}

function deltaOf(previous: TreeEntries, listing: FolderListing, run: CaptureRun, rootsTaken: readonly string[]): TreeDelta {
  const upserts: TreeEntry[] = [];
  for (const entry of run.entries.values()) {
    const was = previous.get(entry.path);
    if (!was || !sameEntry(was, entry)) upserts.push(entry);
  }
  const removed: string[] = [];
  const visit = (path: string) => {
    if (!previous.has(path)) return;
    if (!run.entries.has(path)) removed.push(path);
    if (previous.get(path)?.kind === "directory") for (const inner of listing.get(path) ?? []) visit(inner);
  };
  for (const taken of rootsTaken) visit(taken);
  return { upserts: [...sortedTreeEntries(upserts)], removed: sortedPaths(removed) };
}

/** `previous` with the delta applied, in tree order, with the stamps of what was captured now. */
function nextCapture(previous: CapturedTree, run: CaptureRun, delta: TreeDelta): CapturedTree {
  const gone = new Set(delta.removed);
  const entries = new Map<string, TreeEntry>();
  const { upserts } = delta;
  let next = 0;
  for (const entry of previous.entries.values()) {
    while (next < upserts.length && compareTreeKeys((upserts[next] as TreeEntry).path, entry.path) <= 0) {
      const upsert = upserts[next++] as TreeEntry;
      entries.set(upsert.path, upsert);
    }
    if (!gone.has(entry.path) && !entries.has(entry.path)) entries.set(entry.path, entry);
  }
  while (next < upserts.length) {
    const upsert = upserts[next++] as TreeEntry;
    entries.set(upsert.path, upsert);
  }
  const stamps = new Map<string, FileStamp>(previous.stamps);
  for (const path of gone) stamps.delete(path);
  for (const path of run.entries.keys()) {
    const stamp = run.stamps.get(path);
    if (stamp) stamps.set(path, stamp);
    else stamps.delete(path);
  }
  return { entries, stamps, fresh: run.fresh, skipped: run.skipped, hashed: run.hashed, truncated: false };
}

/**
 * `previous` with the delta applied, its entries copied with the new paths in their places (paths
 * compared only until the last new one is placed) and its stamps updated in place.
 */
function withAddedPaths(previous: CapturedTree, run: CaptureRun, delta: TreeDelta, added: readonly TreeEntry[]): CapturedTree {
  const gone = new Set(delta.removed);
  const changed = new Map(delta.upserts.map((entry) => [entry.path, entry]));
  const entries = new Map<string, TreeEntry>();
  let next = 0;
  for (const entry of previous.entries.values()) {
    while (next < added.length && compareTreeKeys((added[next] as TreeEntry).path, entry.path) < 0) {
      const fresh = added[next++] as TreeEntry;
      entries.set(fresh.path, fresh);
    }
    if (!gone.has(entry.path)) entries.set(entry.path, changed.get(entry.path) ?? entry);
  }
  for (; next < added.length; next++) entries.set((added[next] as TreeEntry).path, added[next] as TreeEntry);
  const stamps = previous.stamps as Map<string, FileStamp>;
  updateStamps(stamps, run, gone);
  return { entries, stamps, fresh: run.fresh, skipped: run.skipped, hashed: run.hashed, truncated: false };
}

function updateStamps(stamps: Map<string, FileStamp>, run: CaptureRun, gone: Iterable<string>): void {
  for (const path of gone) stamps.delete(path);
  for (const path of run.entries.keys()) {
    const stamp = run.stamps.get(path);
    if (stamp) stamps.set(path, stamp);
    else stamps.delete(path);
  }
}

/** `previous` itself with the delta applied: only entries it holds change or go, so its tree order stays. */
function updatedCapture(previous: CapturedTree, run: CaptureRun, delta: TreeDelta): CapturedTree {
  // Read-only to every other reader: the caller gave this one its tree (`reusePrevious`).
  const entries = previous.entries as Map<string, TreeEntry>;
  const stamps = previous.stamps as Map<string, FileStamp>;
  for (const path of delta.removed) entries.delete(path);
  for (const entry of delta.upserts) entries.set(entry.path, entry);
  updateStamps(stamps, run, delta.removed);
  return { entries, stamps, fresh: run.fresh, skipped: run.skipped, hashed: run.hashed, truncated: false };
}

function sortedTreeEntries(entries: TreeEntry[]): TreeEntry[] {
  return entries.sort((a, b) => compareTreeKeys(a.path, b.path));
}

/** Whether `path` lies below `folder` (not at it). */
function isBelow(path: string, folder: string): boolean {
  if (!isEscapedText(path) && !isEscapedText(folder)) return path.length > folder.length + 1 && path.startsWith(`${folder}/`);
  const inner = decodeByteText(path);
  const outer = decodeByteText(folder);
  if (!inner || !outer || inner.length <= outer.length + 1) return false;
  return inner[outer.length] === 0x2f && inner.subarray(0, outer.length).equals(outer);
}
