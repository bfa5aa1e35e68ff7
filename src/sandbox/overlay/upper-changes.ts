import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, type Stats } from "node:fs";
import { open } from "node:fs/promises";
import { getAttributeSync } from "@napi-rs/xattr";
import { timeSlices, type TimeSlices } from "../../core/time-slices.js";
import {
  bytesOf,
  childPath,
  type EntryPath,
  passesThrough,
  rootPath,
  shownOf,
  textOf,
  viaDescriptorBytes,
} from "../../workspace/entry-path.js";
import type { FolderHandles } from "../../workspace/folder-handles.js";
import type { FileSnapshot } from "../../workspace/workspace-files.js";

/**
 * What a layered call changed (SPEC X7), read from its overlay's upper folder
 * once the command has ended, against the workspace as it is now:
 *
 * - a whiteout (character device 0,0) removes the workspace entry of its name;
 * - a folder that also exists in the workspace merges into it, unless the
 *   overlay marked it opaque (removed and made again during the call): then,
 *   like a folder the workspace lacks, it replaces whatever is there, whole;
 * - any other entry replaces the workspace entry of its name.
 *
 * **Never over a newer change.** Each upper entry was made (created, or copied
 * up from the workspace) at its birth time; a workspace entry whose ctime is
 * at or after that moment was changed since by someone else (another session,
 * a revert, a worker that was taken for dead), and a workspace entry that is
 * gone where the upper one was copied up from it (`trusted.overlay.origin`)
 * was deleted since. Such a change of the call is **not applied**: the
 * workspace keeps its newer content, and the call's version is recorded as a
 * change marked not applied (or, when no record can hold it, kept in the
 * project's trash under its path). This is what lets an interrupted command's
 * layer be settled late without erasing confirmed work.
 *
 * The answer is both the plan to apply (`apply-upper.ts`) and the per-file
 * before/after of the changes, read before anything moves. Whatever the apply
 * removes goes to the project's trash whole, so even what is not recorded per
 * file (past the limits below, under `.git` and `node_modules`, or named by
 * bytes that are not UTF-8) can be brought back.
 *
 * Both trees are walked by descriptor, names kept as bytes, with a bounded
 * number of descriptors, in time slices: a layer of 200,000 files or 5,000
 * levels is read in linear time without blocking the worker.
 */

export interface LayerLimits {
  /** Files recorded per call; the rest are counted. */
  maxFiles: number;
  /** Bytes of content read for the records of one call (before and after). */
  maxBytes: number;
  /** Largest single version kept (the blob store's limit). */
  maxFileBytes: number;
}

export interface RecordedFile {
  path: string;
  before: FileSnapshot;
  after: FileSnapshot;
  /** The workspace's file changed since the call's version was made: recorded, not applied. */
  notApplied: boolean;
}

export interface LayerPlan {
  /** Workspace entries moved to the trash before anything is placed. */
  removals: EntryPath[];
  /**
   * Workspace files a move will replace that no record keeps: linked into the trash first, so the
   * move's rename replaces them in one step (a reader never finds the path empty) and the old
   * version is kept all the same.
   */
  preserved: EntryPath[];
  /** Whiteouts inside folders that move whole: deleted first, so no device node reaches the workspace. */
  strayWhiteouts: EntryPath[];
  /** Workspace folders whose mode the call changed. */
  modes: Array<{ entry: EntryPath; mode: number }>;
  /** Upper entries renamed into the workspace, by rank in apply order (`.git`'s objects before what names them, `applyRank`). */
  moves: EntryPath[][];
  /** Upper entries not applied (the workspace changed there since) that no record keeps: kept in the trash under their path. */
  setAside: EntryPath[];
  /** Per-file changes with both contents, for the records. */
  files: RecordedFile[];
  /** Changed files not recorded one by one: under .git or node_modules, past the limits, unreadable, or not named in UTF-8. */
  summarized: { files: number; roots: string[]; overLimit: number; unnamed: number };
  /** Paths of changes not applied because the workspace changed there since the call made its version (shown, for the result). */
  notApplied: string[];
}

type UpperKind = "whiteout" | "file" | "symlink" | "dir" | "special";

const summarizedNames = [Buffer.from(".git"), Buffer.from("node_modules")];
const gitName = Buffer.from(".git");
const objectsName = Buffer.from("objects");

function kindOf(stats: Stats): UpperKind {
  if (stats.isCharacterDevice() && stats.rdev === 0) return "whiteout";
  if (stats.isDirectory()) return "dir";
  if (stats.isFile()) return "file";
  if (stats.isSymbolicLink()) return "symlink";
  return "special";
}

/** `git` writes objects before the index and refs that name them: so does the apply, so a crash halfway leaves a consistent repository. */
function applyRank(entry: EntryPath): 0 | 1 | 2 {
  let below: EntryPath | null = null;
  for (let at: EntryPath | null = entry; at?.parent; below = at, at = at.parent) {
    if (at.name.equals(gitName)) return below?.name.equals(objectsName) ? 1 : 2;
  }
  return 0;
}

/** The path's key for joining what the two walks find at one path (latin1 maps bytes one to one). */
const keyOf = (entry: EntryPath) => bytesOf(entry).toString("latin1");

/** `replaced`: a workspace file the move will rename over, which only its record keeps (one inside a removed folder goes to the trash with it). */
type Before = { from: "workspace"; stats: Stats; replaced: boolean } | { from: "absent" };
interface Pending {
  entry: EntryPath;
  before: Before;
  after: { entry: EntryPath; stats: Stats } | null;
  notApplied: boolean;
}

export interface PlanInput {
  upper: FolderHandles;
  workspace: FolderHandles;
  /** Just before the command started: the moment used where an upper entry's birth time is unknown. */
  startedAtMs: number;
  limits: LayerLimits;
  slices?: TimeSlices;
}

export async function planLayer(input: PlanInput): Promise<LayerPlan> {
  const { upper, workspace, limits } = input;
  const slices = input.slices ?? timeSlices();
  const plan: LayerPlan = {
    removals: [],
    preserved: [],
    strayWhiteouts: [],
    modes: [],
    moves: [],
    setAside: [],
    files: [],
    summarized: { files: 0, roots: [], overLimit: 0, unnamed: 0 },
    notApplied: [],
  };
  const pending = new Map<string, Pending>();
  /** The moves by `applyRank`. */
  const moves: [EntryPath[], EntryPath[], EntryPath[]] = [[], [], []];
  const roots = new Set<string>();
  const summarizedRoot = (entry: EntryPath) => passesThrough(entry, summarizedNames);
  const summarize = (root: EntryPath) => {
    plan.summarized.files++;
    roots.add(shownOf(root));
  };
  /** Since when a workspace change counts as newer than the upper entry: the entry's birth (creation or copy-up). */
  const sinceOf = (stats: Stats) => (stats.birthtimeMs > 0 ? stats.birthtimeMs : input.startedAtMs);
  const changedSince = (stats: Stats, since: number) => stats.ctimeMs >= since;
  const pend = (entry: EntryPath, change: Omit<Pending, "entry">) => {
    const root = summarizedRoot(entry);
    if (root) {
      summarize(root);
      // Not applied and kept by no record: the trash keeps the call's version.
      if (change.notApplied && change.after) plan.setAside.push(change.after.entry);
      return;
    }
    const key = keyOf(entry);
    const known = pending.get(key);
    if (known && change.after) {
      known.after = change.after;
      known.notApplied ||= change.notApplied;
    } else if (!known) pending.set(key, { entry, ...change });
  };
  const markNotApplied = (entry: EntryPath) => plan.notApplied.push(shownOf(entry));

  /**
   * The workspace entry at `entry` and everything below it, as the apply would
   * remove it: whether any of it changed since `since`, and its files (each a
   * deletion to record). Walked by descriptor, without following links.
   */
  const inspectRemoval = async (entry: EntryPath, stats: Stats, since: number) => {
    const files: Array<{ entry: EntryPath; stats: Stats }> = [];
    let changed = changedSince(stats, since);
    if (stats.isFile()) files.push({ entry, stats });
    if (stats.isDirectory()) {
      const stack = [entry];
      while (stack.length > 0) {
        const folder = stack.pop() as EntryPath;
        const fd = workspace.folder(folder);
        if (fd === null) continue;
        let names: Buffer[];
        try {
          names = readdirSync(viaDescriptorBytes(fd), { encoding: "buffer" });
        } catch {
          continue;
        }
        for (const name of names) {
          const inner = childPath(folder, name);
          const innerStats = workspace.entry(folder, name);
          if (!innerStats) continue;
          if (changedSince(innerStats, since)) changed = true;
          if (innerStats.isFile()) files.push({ entry: inner, stats: innerStats });
          else if (innerStats.isDirectory()) stack.push(inner);
          if (slices.spent()) await slices.pause();
        }
      }
    }
    return { changed, files };
  };
  const remove = (entry: EntryPath, files: ReadonlyArray<{ entry: EntryPath; stats: Stats }>) => {
    plan.removals.push(entry);
    for (const file of files)
      pend(file.entry, { before: { from: "workspace", stats: file.stats, replaced: false }, after: null, notApplied: false });
  };
  /** The overlay copied this upper entry up from the workspace entry at its path (so that one existed when the call touched it). */
  const copiedUp = (parent: EntryPath, name: Buffer, kind: UpperKind): boolean | null => {
    const at =
      kind === "dir"
        ? (() => {
            const fd = upper.folder(childPath(parent, name));
            return fd === null ? null : `/proc/self/fd/${fd}/.`;
          })()
        : (() => {
            const fd = upper.folder(parent);
            const text = textOf(childPath(rootPath, name));
            // xattr calls take text paths: a name that is not UTF-8 cannot be asked (unknown).
            return fd === null || text === null ? null : `/proc/self/fd/${fd}/${text}`;
          })();
    if (at === null) return null;
    try {
      return getAttributeSync(at, "trusted.overlay.origin") !== null;
    } catch {
      return null;
    }
  };
  const opaque = (entry: EntryPath): boolean => {
    const fd = upper.folder(entry);
    return fd !== null && getAttributeSync(`/proc/self/fd/${fd}/.`, "trusted.overlay.opaque")?.toString("latin1") === "y";
  };

  /** Frames of the walk of upper: `merge` below folders both sides have, `new` below folders that move whole. */
  const stack: Array<{ folder: EntryPath; mode: "merge" | "new" }> = [{ folder: rootPath, mode: "merge" }];
  while (stack.length > 0) {
    const { folder, mode } = stack.pop() as { folder: EntryPath; mode: "merge" | "new" };
    const upperFd = upper.folder(folder);
    if (upperFd === null) continue;
    const names = readdirSync(viaDescriptorBytes(upperFd), { encoding: "buffer" });
    for (const name of names) {
      if (slices.spent()) await slices.pause();
      const entry = childPath(folder, name);
      const stats = upper.entry(folder, name);
      if (!stats) continue;
      const kind = kindOf(stats);
      if (mode === "new") {
        if (kind === "whiteout") plan.strayWhiteouts.push(entry);
        else if (kind === "dir") stack.push({ folder: entry, mode: "new" });
        else if (kind === "file") pend(entry, { before: { from: "absent" }, after: { entry, stats }, notApplied: false });
        continue;
      }
      const since = sinceOf(stats);
      const there = workspace.entry(folder, name);

      if (kind === "whiteout") {
        if (!there) continue;
        const removal = await inspectRemoval(entry, there, since);
        if (!removal.changed) remove(entry, removal.files);
        else {
          // Changed after the command deleted it: the newer version stays; the deletion is recorded, not made.
          markNotApplied(entry);
          if (there.isFile()) pend(entry, { before: { from: "workspace", stats: there, replaced: false }, after: null, notApplied: true });
        }
        continue;
      }

      if (kind === "dir") {
        if (there?.isDirectory() && !opaque(entry)) {
          if ((there.mode & 0o7777) !== (stats.mode & 0o7777)) plan.modes.push({ entry, mode: stats.mode & 0o7777 });
          stack.push({ folder: entry, mode: "merge" });
          continue;
        }
        // A folder copied up from one the workspace no longer has: it was removed (or replaced) since.
        const goneSince = !there?.isDirectory() && copiedUp(folder, name, kind) === true;
        const removal = there ? await inspectRemoval(entry, there, since) : null;
        if (goneSince || removal?.changed) {
          markNotApplied(entry);
          plan.setAside.push(entry);
          continue;
        }
        if (there && removal) remove(entry, removal.files);
        moves[applyRank(entry)].push(entry);
        stack.push({ folder: entry, mode: "new" });
        continue;
      }

      // A file, symlink or special entry replaces the workspace's. A replaced file is kept by its record;
      // anything else (a folder, a symlink, a file too large to record) goes to the trash first.
      const summarized = summarizedRoot(entry) !== null;
      const fileOverFile = there?.isFile() === true && kind === "file";
      const keptByRecord = fileOverFile && (summarized || (there as Stats).size <= limits.maxFileBytes);
      const removal = there && !fileOverFile ? await inspectRemoval(entry, there, since) : null;
      const conflict = there
        ? (removal?.changed ?? changedSince(there, since))
        : // Gone from the workspace: deleted since if the call's version was copied up from it, and its folder changed since
          // (a file the command renamed to a new name was copied up from another path; its folder did not change).
          copiedUp(folder, name, kind) !== false && workspaceFolderChangedSince(workspace, folder, since);
      if (conflict) {
        markNotApplied(entry);
        if (kind === "file")
          pend(entry, {
            before: there?.isFile() ? { from: "workspace", stats: there, replaced: false } : { from: "absent" },
            after: { entry, stats },
            notApplied: true,
          });
        else plan.setAside.push(entry);
        continue;
      }
      if (removal) remove(entry, removal.files);
      else if (there && !keptByRecord) plan.preserved.push(entry);
      else if (there && !summarized)
        pending.set(keyOf(entry), { entry, before: { from: "workspace", stats: there, replaced: true }, after: null, notApplied: false });
      moves[applyRank(entry)].push(entry);
      if (kind === "file") pend(entry, { before: { from: "absent" }, after: { entry, stats }, notApplied: false });
    }
  }
  // In rank order, each rank in the order found: a partition, linear (a sort of 200,000 moves held the loop 100 ms).
  plan.moves = moves;
  plan.summarized.roots = [...roots].sort();

  // The contents, read now: the apply is about to move the upper files and trash the workspace's.
  let budget = limits.maxBytes;
  const unrecorded = (change: Pending, why: "limits" | "name") => {
    if (why === "name") plan.summarized.unnamed++;
    else plan.summarized.overLimit++;
    // A file the move would rename over, kept by no record: the trash keeps a copy instead.
    if (change.before.from === "workspace" && change.before.replaced) plan.preserved.push(change.entry);
    // The call's version of a change not applied, kept by no record: the trash keeps it instead.
    if (change.notApplied && change.after) plan.setAside.push(change.after.entry);
  };
  for (const change of pending.values()) {
    if (slices.spent()) await slices.pause();
    const path = textOf(change.entry);
    if (path === null) {
      unrecorded(change, "name");
      continue;
    }
    if (plan.files.length >= limits.maxFiles) {
      unrecorded(change, "limits");
      continue;
    }
    const beforeSize = change.before.from === "workspace" ? change.before.stats.size : 0;
    const afterSize = change.after?.stats.size ?? 0;
    if (beforeSize > limits.maxFileBytes || afterSize > limits.maxFileBytes || beforeSize + afterSize > budget) {
      unrecorded(change, "limits");
      continue;
    }
    const before = change.before.from === "workspace" ? await readIn(workspace, change.entry) : ({ kind: "absent" } as const);
    const after = change.after ? await readIn(upper, change.after.entry) : ({ kind: "absent" } as const);
    if (before === null || after === null) {
      unrecorded(change, "limits");
      continue;
    }
    budget -= beforeSize + afterSize;
    // Opened for writing and closed, or touched: same content and mode is no change.
    if (before.kind === "file" && after.kind === "file" && before.mode === after.mode && before.content.equals(after.content)) continue;
    plan.files.push({ path, before, after, notApplied: change.notApplied });
  }
  return plan;
}

/** Whether entries of the workspace folder at `folder` were added, removed or renamed since `since` (or it is gone). */
function workspaceFolderChangedSince(workspace: FolderHandles, folder: EntryPath, since: number): boolean {
  const fd = workspace.folder(folder);
  if (fd === null) return true;
  try {
    return fstatSync(fd).ctimeMs >= since;
  } catch {
    return true;
  }
}

const readFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** Up to this size a file is read synchronously: a few local syscalls cost less than trips through libuv's thread pool. */
const syncReadBytes = 1024 * 1024;

/**
 * A file through its held folder, never a symlink; null if it is no longer a
 * plain file, or cannot be opened now (descriptors exhausted: it is then not
 * recorded, and the trash keeps what it replaces).
 */
async function readIn(handles: FolderHandles, entry: EntryPath): Promise<FileSnapshot | null> {
  const parent = entry.parent;
  if (!parent) return null;
  const folderFd = handles.folder(parent);
  if (folderFd === null) return null;
  let fd: number;
  try {
    fd = openSync(viaDescriptorBytes(folderFd, entry.name), readFlags);
  } catch {
    return null;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return null;
    const mode = stats.mode & 0o7777;
    if (stats.size <= syncReadBytes) return { kind: "file", content: readFileSync(fd), mode };
    const handle = await open(`/proc/self/fd/${fd}`, readFlags);
    try {
      return { kind: "file", content: await handle.readFile(), mode };
    } finally {
      await handle.close();
    }
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
