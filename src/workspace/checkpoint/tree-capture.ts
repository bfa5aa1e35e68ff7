import { type BigIntStats, fstatSync, lstatSync, readdirSync, readlinkSync } from "node:fs";
import { timeSlices } from "../../core/time-slices.js";
import { bytesOf, childPath, type EntryPath, rootPath, viaDescriptorBytes } from "../entry-path.js";
import { type FolderHandles, openFolderHandles } from "../folder-handles.js";
import { encodeByteText } from "./byte-text.js";
import { hashFileIn, type ReadingContext, readingContext } from "./file-digest.js";
import { type ListedEntry, listTree, type StatListing } from "./stat-listing.js";
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
 *
 * With a previous capture of `listFromEntries` entries or more, the stats come
 * from one `find` process (`stat-listing.ts`), which lstats a large tree in
 * about half the time; the files whose stamp moved are still opened and read
 * by descriptor. Both ways give the same tree; when the listing is not to be
 * had, the descriptor walk runs.
 */
export interface CaptureOptions {
  previous?: CapturedTree;
  /** Entries kept at most before the capture stops, `truncated`. Default 500,000. */
  maxEntries?: number;
  signal?: AbortSignal;
  /** How the entries are listed: `find`, or the descriptor walk; by default as `listFromEntries` says. */
  lister?: "find" | "descriptors";
}

const defaultMaxEntries = 500_000;
/** Below this many entries in the previous capture, starting a process costs more than the listing saves. */
const listFromEntries = 1_000;

/** One capture's state; `tree-update.ts` runs the same steps over the changed paths only. */
export interface CaptureRun {
  folders: FolderHandles;
  reading: ReadingContext;
  previous: CapturedTree | null;
  /** `tree`: a file is fresh when `previous` holds no file of its digest; `path`: when its digest differs from `previous`'s entry at its path. */
  freshness: "tree" | "path";
  /** For `tree`: the digests `previous` holds, gathered when a file is first hashed (most walks reuse every digest). */
  previousDigests: Set<string> | null;
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
    const lister = options.lister ?? ((options.previous?.entries.size ?? 0) >= listFromEntries ? "find" : "descriptors");
    const listing =
      lister === "find"
        ? await listTree(root, {
            maxRecords: run.maxEntries,
            onEntry: (entry) => noteKept(run, entry),
            ...(options.signal ? { signal: options.signal } : {}),
          })
        : null;
    options.signal?.throwIfAborted();
    const truncated = listing ? await walkListing(run, listing) : await walk(run, rootPath);
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
  return {
    folders,
    reading,
    previous,
    freshness,
    previousDigests: null,
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

/** `walk` over a `find` listing: the same entries in the same order, files whose stamp moved read by descriptor. */
async function walkListing(run: CaptureRun, listing: StatListing): Promise<boolean> {
  const { slices, signal } = run.reading;
  const frames: { at: EntryPath; entries: ListedEntry[]; next: number }[] = [{ at: rootPath, entries: listing.top, next: 0 }];
  while (frames.length > 0) {
    const frame = frames[frames.length - 1] as (typeof frames)[number];
    const entry = frame.entries[frame.next++];
    if (entry === undefined) {
      frames.pop();
      continue;
    }
    if (run.entries.size >= run.maxEntries) return true;
    if ((await captureListed(run, frame.at, entry)) && entry.children)
      frames.push({ at: childPath(frame.at, nameOf(entry)), entries: entry.children, next: 0 });
    if (slices.spent()) {
      signal?.throwIfAborted();
      await slices.pause();
    }
  }
  return false;
}

/**
 * Runs as find's records arrive: the entry's path text, and the previous capture's entry when it
 * is still what the record says (a folder of the same mode, a link to the same target, a file of
 * the same stamp), so that the ordered pass after the listing mostly copies references.
 */
function noteKept(run: CaptureRun, listed: ListedEntry): void {
  const path = listed.text;
  const was = run.previous?.entries.get(path);
  if (was === undefined) return;
  if (listed.type === "d") {
    if (was.kind === "directory" && was.mode === listed.mode) listed.kept = was;
  } else if (listed.type === "l") {
    if (was.kind === "symlink" && listed.target.length > 0 && was.target === encodeByteText(listed.target)) listed.kept = was;
  } else if (listed.type === "f" && was.kind === "file") {
    const stamp = run.previous?.stamps.get(path);
    if (stamp && sameListedStamp(listed, stamp)) {
      listed.kept = was.mode === listed.mode ? was : { ...was, mode: listed.mode };
      listed.keptStamp = stamp;
    }
  }
}

/** `captureEntry` for a listed entry (`noteKept` saw it first); answers whether it is a folder to enter. */
async function captureListed(run: CaptureRun, parent: EntryPath, listed: ListedEntry): Promise<boolean> {
  const { text: path, mode, kept } = listed;
  switch (listed.type) {
    case "d":
      run.entries.set(path, kept ?? { kind: "directory", path, mode });
      return true;
    case "l":
      // Empty: find could not read it (replaced since its lstat), as `readLink`'s null.
      if (listed.target.length > 0) run.entries.set(path, kept ?? { kind: "symlink", path, target: encodeByteText(listed.target) });
      return false;
    case "f":
      break;
    default:
      run.skipped.push({ path, reason: "special", type: listedSpecialTypes[listed.type] ?? "block_device" });
      return false;
  }
  if (listed.nlink > 1 && listed.uid !== run.reading.ownerUid) {
    run.skipped.push({ path, reason: "hard_link" });
    return false;
  }
  if (kept && listed.keptStamp) {
    // Its digest is `previous`'s: never fresh. The objects are shared, never changed.
    run.entries.set(path, kept);
    run.stamps.set(path, listed.keptStamp);
    return false;
  }
  const folderFd = run.folders.folder(parent);
  if (folderFd !== null) await hashFile(run, folderFd, nameOf(listed), path);
  return false;
}

const listedSpecialTypes: Record<string, SpecialType> = { p: "fifo", s: "socket", c: "character_device", b: "block_device" };

function nameOf(listed: ListedEntry): Buffer {
  return listed.path.subarray(listed.path.lastIndexOf(slash) + 1);
}

const slash = 0x2f;

/** Whether find's stat is the stamp, field for field, exactly (a field find did not give exactly never matches). */
function sameListedStamp(listed: ListedEntry, stamp: FileStamp): boolean {
  // Number() of a bigint is exact below 2^53, and a listed number is below 10^15, so equal numbers are equal values.
  return (
    listed.size >= 0 &&
    Number(stamp.size) === listed.size &&
    Number(stamp.ino) === listed.ino &&
    Number(stamp.dev) === listed.dev &&
    sameTime(stamp.mtimeNs, listed.mtimeSec, listed.mtimeNsec) &&
    sameTime(stamp.ctimeNs, listed.ctimeSec, listed.ctimeNsec)
  );
}

function sameTime(ns: bigint, seconds: number, nanoseconds: number): boolean {
  return seconds >= 0 && nanoseconds >= 0 && ns === BigInt(seconds) * 1_000_000_000n + BigInt(nanoseconds);
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
  const known = run.freshness === "path" ? sameDigestAsBefore(run, entry) : previousDigestsOf(run).has(entry.sha256);
  if (!known && !run.freshDigests.has(entry.sha256)) {
    run.freshDigests.add(entry.sha256);
    run.fresh.push(entry);
  }
}

function previousDigestsOf(run: CaptureRun): Set<string> {
  if (run.previousDigests) return run.previousDigests;
  const digests = new Set<string>();
  for (const entry of run.previous?.entries.values() ?? []) if (entry.kind === "file") digests.add(entry.sha256);
  run.previousDigests = digests;
  return digests;
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

type SpecialType = "fifo" | "socket" | "character_device" | "block_device";

function specialType(stats: BigIntStats): SpecialType {
  if (stats.isFIFO()) return "fifo";
  if (stats.isSocket()) return "socket";
  return stats.isCharacterDevice() ? "character_device" : "block_device";
}
