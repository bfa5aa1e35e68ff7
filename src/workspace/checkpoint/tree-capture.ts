import { type BigIntStats, fstatSync, lstatSync, readdirSync, readlinkSync } from "node:fs";
import { timeSlices } from "../../core/time-slices.js";
import { bytesOf, childPath, type EntryPath, rootPath, viaDescriptorBytes } from "../entry-path.js";
import { type FolderHandles, openFolderHandles } from "../folder-handles.js";
import { encodeByteText } from "./byte-text.js";
import { hashFileIn, type ReadingContext, readingContext } from "./file-digest.js";
import type { CapturedTree, FileEntry, FileStamp, SkippedEntry, TreeEntry } from "./tree-entry.js";

/**
 * Captures a workspace's whole tree for a checkpoint (SPEC W1, S6): every
 * entry, `.git` and `node_modules` included, walked from folders held by
 * descriptor (`folder-handles.ts`), never through a symlink; files opened by
 * `file-digest.ts`. Siblings are visited in the order of their names' bytes,
 * depth first, so the entries come out in tree order (`tree-order.ts`).
 *
 * Given the `previous` capture of the same workspace on this host, a file
 * whose device, inode, size, mtime and ctime are all unchanged keeps its
 * previous digest unread: only what moved is hashed (`hashed` counts them).
 * The event loop gets a turn whenever a slice is spent; `signal` aborts
 * between slices (the capture then throws its reason).
 */
export interface CaptureOptions {
  previous?: CapturedTree;
  /** Entries kept at most before the capture stops, `truncated`. Default 500,000. */
  maxEntries?: number;
  signal?: AbortSignal;
}

const defaultMaxEntries = 500_000;

/** One capture's state; `tree-update.ts` runs the same steps over the changed paths only. */
export interface CaptureRun {
  folders: FolderHandles;
  reading: ReadingContext;
  previous: CapturedTree | null;
  /** Digests `previous` holds; null: a file is fresh when its digest differs from `previous`'s entry at its path. */
  previousDigests: ReadonlySet<string> | null;
  maxEntries: number;
  entries: Map<string, TreeEntry>;
  stamps: Map<string, FileStamp>;
  fresh: FileEntry[];
  freshDigests: Set<string>;
  skipped: SkippedEntry[];
  hashed: number;
}

/** A folder being walked: its names in byte order, and the next one to visit. */
interface Frame {
  at: EntryPath;
  names: Buffer[];
  next: number;
}

export async function captureTree(root: string, options: CaptureOptions = {}): Promise<CapturedTree> {
  const folders = openFolderHandles(root);
  try {
    const run = startRun(folders, options, "tree");
    const truncated = await walk(run, rootPath);
    const { entries, stamps, fresh, skipped, hashed } = run;
    return { entries, stamps, fresh, skipped, hashed, truncated };
  } finally {
    folders.close();
  }
}

/** A capture over `folders`; `freshness` says how a new digest is told (`CaptureRun.previousDigests`). */
export function startRun(folders: FolderHandles, options: CaptureOptions, freshness: "tree" | "path"): CaptureRun {
  const ownerUid = fstatSync(folders.folder(rootPath) as number).uid;
  const reading = readingContext(ownerUid, timeSlices(), options.signal);
  const previous = options.previous ?? null;
  let previousDigests: Set<string> | null = null;
  if (freshness === "tree") {
    previousDigests = new Set<string>();
    for (const entry of previous?.entries.values() ?? []) if (entry.kind === "file") previousDigests.add(entry.sha256);
  }
  return {
    folders,
    reading,
    previous,
    previousDigests,
    maxEntries: options.maxEntries ?? defaultMaxEntries,
    entries: new Map(),
    stamps: new Map(),
    fresh: [],
    freshDigests: new Set(),
    skipped: [],
    hashed: 0,
  };
}

/** Below the folder `from`, depth first, siblings in byte order; answers whether it stopped at `maxEntries`. */
export async function walk(run: CaptureRun, from: EntryPath): Promise<boolean> {
  const { slices, signal } = run.reading;
  const frames: Frame[] = [{ at: from, names: listFolder(run.folders, from), next: 0 }];
  while (frames.length > 0) {
    const frame = frames[frames.length - 1] as Frame;
    const name = frame.names[frame.next++];
    if (name === undefined) {
      frames.pop();
      continue;
    }
    if (run.entries.size >= run.maxEntries) return true;
    const at = childPath(frame.at, name);
    if (await captureEntry(run, at)) frames.push({ at, names: listFolder(run.folders, at), next: 0 });
    if (slices.spent()) {
      signal?.throwIfAborted();
      await slices.pause();
    }
  }
  return false;
}

/** A folder's names in byte order; none when it is gone or no longer a real folder (a live workspace changed meanwhile). */
function listFolder(folders: FolderHandles, at: EntryPath): Buffer[] {
  const fd = folders.folder(at);
  if (fd === null) return [];
  try {
    return readdirSync(viaDescriptorBytes(fd), { encoding: "buffer" }).sort(Buffer.compare);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/** Records one entry; answers whether it is a folder to enter. */
export async function captureEntry(run: CaptureRun, at: EntryPath): Promise<boolean> {
  const parent = at.parent as EntryPath;
  const folderFd = run.folders.folder(parent);
  if (folderFd === null) return false;
  const stats = lstatSync(viaDescriptorBytes(folderFd, at.name), { bigint: true, throwIfNoEntry: false });
  if (!stats) return false;
  const path = encodeByteText(bytesOf(at));
  const mode = Number(stats.mode & 0o7777n);
  if (stats.isDirectory()) {
    run.entries.set(path, { kind: "directory", path, mode });
    return true;
  }
  if (stats.isSymbolicLink()) {
    const target = readLink(folderFd, at.name);
    if (target !== null) run.entries.set(path, { kind: "symlink", path, target: encodeByteText(target) });
    return false;
  }
  if (!stats.isFile()) {
    run.skipped.push({ path, reason: "special", type: specialType(stats) });
    return false;
  }
  if (stats.nlink > 1n && Number(stats.uid) !== run.reading.ownerUid) {
    run.skipped.push({ path, reason: "hard_link" });
    return false;
  }
  const reused = reusedDigest(run, path, stats);
  if (reused) keepFile(run, { ...reused, mode }, stampOf(stats));
  else await hashFile(run, folderFd, at.name, path);
  return false;
}

/** The previous capture's entry for a file whose stamp has not moved. */
function reusedDigest(run: CaptureRun, path: string, stats: BigIntStats): FileEntry | null {
  const was = run.previous?.entries.get(path);
  const stamp = run.previous?.stamps.get(path);
  if (was?.kind !== "file" || !stamp) return null;
  const unchanged =
    stamp.dev === stats.dev &&
    stamp.ino === stats.ino &&
    stamp.size === stats.size &&
    stamp.mtimeNs === stats.mtimeNs &&
    stamp.ctimeNs === stats.ctimeNs;
  return unchanged ? was : null;
}

async function hashFile(run: CaptureRun, folderFd: number, name: Buffer, path: string): Promise<void> {
  const read = await hashFileIn(folderFd, name, run.reading);
  if (read.kind === "hard_link") run.skipped.push({ path, reason: "hard_link" });
  if (read.kind !== "hashed") return;
  run.hashed++;
  const entry: FileEntry = { kind: "file", path, mode: Number(read.stats.mode & 0o7777n), size: read.size, sha256: read.sha256 };
  keepFile(run, entry, read.settled ? stampOf(read.stats) : null);
}

function keepFile(run: CaptureRun, entry: FileEntry, stamp: FileStamp | null): void {
  run.entries.set(entry.path, entry);
  if (stamp) run.stamps.set(entry.path, stamp);
  const known = run.previousDigests === null ? sameDigestAsBefore(run, entry) : run.previousDigests.has(entry.sha256);
  if (!known && !run.freshDigests.has(entry.sha256)) {
    run.freshDigests.add(entry.sha256);
    run.fresh.push(entry);
  }
}

function sameDigestAsBefore(run: CaptureRun, entry: FileEntry): boolean {
  const was = run.previous?.entries.get(entry.path);
  return was?.kind === "file" && was.sha256 === entry.sha256;
}

function stampOf(stats: BigIntStats): FileStamp {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs };
}

function readLink(folderFd: number, name: Buffer): Buffer | null {
  try {
    return readlinkSync(viaDescriptorBytes(folderFd, name), { encoding: "buffer" });
  } catch (error) {
    // Replaced or removed since its lstat: a live workspace; the next capture sees what it became.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EINVAL" || code === "ENOENT") return null;
    throw error;
  }
}

function specialType(stats: BigIntStats): "fifo" | "socket" | "character_device" | "block_device" {
  if (stats.isFIFO()) return "fifo";
  if (stats.isSocket()) return "socket";
  return stats.isCharacterDevice() ? "character_device" : "block_device";
}
