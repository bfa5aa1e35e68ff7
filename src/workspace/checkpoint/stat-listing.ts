import { timeSlices } from "../../core/time-slices.js";
import { startChild } from "../../processes/start-child.js";
import { encodeByteText, isEscapedText } from "./byte-text.js";
import type { FileStamp, TreeEntry } from "./tree-entry.js";

/**
 * Every entry of a tree with its lstat, from one GNU `find` process (SPEC W1, S6): a whole-tree
 * capture of a large workspace spends most of its time in one lstat per entry, which costs Node
 * several microseconds of its own each (a `/proc/self/fd` path, a BigIntStats object); `find`
 * does the same syscalls without that. It is only a listing: `find -H` follows no symlink but
 * the root path itself (as the descriptor walk's open of the root does), and traverses with
 * gnulib's fts, which enters each folder from its parent's descriptor and checks it is the
 * folder it stat'ed. No content is read from it: a file whose stamp moved is still opened and hashed from
 * a folder held by descriptor (`file-digest.ts`), and a FIFO or device is never opened.
 *
 * Null (the caller walks by descriptor instead, as before) when `find` is missing, fails or
 * reports anything (a folder it could not read, an entry gone mid-walk), when the tree holds more
 * than `maxRecords` entries, when a record is not what the format says, or on an abort.
 */
export interface ListedEntry {
  /** find's `%y`: `f` file, `d` folder, `l` symlink, `p` FIFO, `s` socket, `c`/`b` device. */
  type: string;
  /** `st_mode & 0o7777`. */
  mode: number;
  nlink: number;
  uid: number;
  /** Size, device and inode; -1 when not exactly a number (more than 15 digits): such a stamp never matches. */
  size: number;
  dev: number;
  ino: number;
  /** mtime and ctime as whole seconds and nanoseconds; -1 when find's text does not give them exactly. */
  mtimeSec: number;
  mtimeNsec: number;
  ctimeSec: number;
  ctimeNsec: number;
  /** The path's bytes relative to the root (`a/b`), and the same bytes as a latin1 string (its order is the bytes' order). */
  path: Buffer;
  key: string;
  /** A symlink's target; empty for anything else (or when it could not be read). */
  target: Buffer;
  /** A folder's entries, in the order find met them until `listTree` sorts them. */
  children: ListedEntry[] | null;
  /** The path as a byte text (`byte-text.ts`). */
  text: string;
  /** What the caller's `onEntry` noted of it as it arrived (the capture: the previous entry it keeps), else null. */
  kept: TreeEntry | null;
  keptStamp: FileStamp | null;
}

/** The root's entries; each folder's `children` in byte order of their names. */
export interface StatListing {
  top: ListedEntry[];
  count: number;
}

const format = "%y %m %s %D %i %n %U %T@ %C@ %d\\0%l\\0%P\\0";

export interface ListingOptions {
  maxRecords: number;
  signal?: AbortSignal;
  /** Called on each entry as it is parsed, while find still runs (the two overlap on a second core). */
  onEntry?: (entry: ListedEntry) => void;
}

export async function listTree(root: string, options: ListingOptions): Promise<StatListing | null> {
  if (!root.startsWith("/") || options.signal?.aborted) return null;
  const started = startChild("find", ["-H", root, "-mindepth", "1", "-printf", format], {
    stdio: ["ignore", "pipe", "pipe"],
    // Nothing of the worker's: a fixed locale and PATH, and a working folder find can always return to.
    cwd: "/",
    env: { LC_ALL: "C", PATH: "/usr/bin:/bin" },
    ...(options.signal ? { signal: options.signal, killSignal: "SIGKILL" } : {}),
  });
  const { child } = started;
  const stdout = child?.stdout;
  if (!child || !stdout) {
    await started.closed;
    return null;
  }
  const parser = listingParser(options.onEntry);
  let failed = false;
  let reported = false;
  const stop = () => {
    failed = true;
    child.kill("SIGKILL");
  };
  stdout.on("data", (chunk: Buffer) => {
    if (failed) return;
    if (!parser.push(chunk) || parser.count > options.maxRecords) stop();
  });
  child.stderr?.on("data", () => {
    reported = true;
  });
  const end = await started.closed;
  if (failed || reported || end.kind !== "closed" || end.exitCode !== 0 || options.signal?.aborted) return null;
  const listing = parser.finished();
  if (listing) await sortFolders(listing.top, options.signal);
  return listing;
}

/** Parses find's records as they arrive, each folder's entries gathered under it by depth (find lists a folder before what it holds). */
function listingParser(onEntry: ((entry: ListedEntry) => void) | undefined) {
  const top: ListedEntry[] = [];
  /** The entries list of the latest folder at each depth; depth 1 is the root's. */
  const levels: ListedEntry[][] = [top, top];
  const parents: (ListedEntry | null)[] = [null, null];
  let pending: Buffer | null = null;
  let count = 0;
  let valid = true;

  const place = (entry: ListedEntry, depth: number): boolean => {
    const siblings = levels[depth];
    const parent = parents[depth];
    if (!siblings || parent === undefined) return false;
    // Pre-order with depths is all the structure there is: each path must lie right under its folder's.
    if (parent === null ? entry.key.includes("/") : !isChildKey(parent.key, entry.key)) return false;
    siblings.push(entry);
    if (entry.children) {
      levels[depth + 1] = entry.children;
      parents[depth + 1] = entry;
      levels.length = depth + 2;
      parents.length = depth + 2;
    }
    return true;
  };

  return {
    get count() {
      return count;
    },
    /** False when a record is malformed. */
    push(chunk: Buffer): boolean {
      const buffer: Buffer = pending ? Buffer.concat([pending, chunk]) : chunk;
      let at = 0;
      for (;;) {
        const record = parseRecord(buffer, at);
        if (record === null) break;
        if (record === "malformed" || !place(record.entry, record.depth)) {
          valid = false;
          return false;
        }
        count++;
        onEntry?.(record.entry);
        at = record.next;
      }
      pending = at < buffer.length ? buffer.subarray(at) : null;
      return true;
    },
    /** The entries, or null when a record was malformed or cut short. */
    finished(): StatListing | null {
      return valid && pending === null ? { top, count } : null;
    },
  };
}

function isChildKey(parentKey: string, key: string): boolean {
  return (
    key.length > parentKey.length + 1 &&
    key.startsWith(parentKey) &&
    key.charCodeAt(parentKey.length) === slash &&
    key.indexOf("/", parentKey.length + 1) === -1
  );
}

/** Every folder's entries in the byte order of their names: siblings share their folder's prefix, so their latin1 keys compare as their names. */
async function sortFolders(top: ListedEntry[], signal: AbortSignal | undefined): Promise<void> {
  const slices = timeSlices();
  const folders = [top];
  for (let list = folders.pop(); list; list = folders.pop()) {
    list.sort(byKey);
    for (const entry of list) if (entry.children && entry.children.length > 0) folders.push(entry.children);
    if (slices.spent()) {
      signal?.throwIfAborted();
      await slices.pause();
    }
  }
}

const byKey = (a: ListedEntry, b: ListedEntry) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** The types `%y` gives on Linux; any other (`?`: stat failed) makes the listing unusable. */
const listedTypes = "fdlpscb";
const slash = 0x2f;
const space = 0x20;
const dot = 0x2e;
const noBytes = Buffer.alloc(0);
/** A latin1 key without high bytes is its path's byte text as `encodeByteText` gives it (unless it looks escaped). */
const highByte = /[\x80-\xff]/;
/** Integers up to 15 digits are exact as numbers. */
const maxDigits = 15;

/**
 * One record at `at`: null when it is not all there yet. A cursor over the buffer, not a split:
 * a tree of 10,000 entries makes 10,000 records, and every allocation per record shows.
 */
function parseRecord(buffer: Buffer, at: number): { entry: ListedEntry; depth: number; next: number } | "malformed" | null {
  const numbersEnd = buffer.indexOf(0, at);
  if (numbersEnd === -1) return null;
  const targetEnd = buffer.indexOf(0, numbersEnd + 1);
  if (targetEnd === -1) return null;
  const pathEnd = buffer.indexOf(0, targetEnd + 1);
  if (pathEnd === -1) return null;
  const cursor = { buffer, at: at + 2, end: numbersEnd };
  const type = String.fromCharCode(buffer[at] as number);
  if (!listedTypes.includes(type) || buffer[at + 1] !== space) return "malformed";
  const mode = readNumber(cursor, 8);
  const size = readNumber(cursor, 10);
  const dev = readNumber(cursor, 10);
  const ino = readNumber(cursor, 10);
  const nlink = readNumber(cursor, 10);
  const uid = readNumber(cursor, 10);
  const mtimeSec = readSeconds(cursor);
  const mtimeNsec = readNanoseconds(cursor);
  const ctimeSec = readSeconds(cursor);
  const ctimeNsec = readNanoseconds(cursor);
  const depth = readNumber(cursor, 10);
  if (cursor.at !== numbersEnd + 1 || mode < 0 || nlink < 0 || uid < 0 || depth < 1 || pathEnd === targetEnd + 1) return "malformed";
  const path = buffer.subarray(targetEnd + 1, pathEnd);
  const key = path.toString("latin1");
  const entry: ListedEntry = {
    type,
    mode,
    nlink,
    uid,
    size,
    dev,
    ino,
    mtimeSec,
    mtimeNsec,
    ctimeSec,
    ctimeNsec,
    path,
    key,
    target: targetEnd === numbersEnd + 1 ? noBytes : buffer.subarray(numbersEnd + 1, targetEnd),
    children: type === "d" ? [] : null,
    text: highByte.test(key) || isEscapedText(key) ? encodeByteText(path) : key,
    kept: null,
    keptStamp: null,
  };
  return { entry, depth, next: pathEnd + 1 };
}

interface Cursor {
  buffer: Buffer;
  at: number;
  end: number;
}

/** Digits up to a space or the field's end, which is passed; -1 when there are none, too many, or another byte. */
function readNumber(cursor: Cursor, radix: 8 | 10): number {
  const { buffer, end } = cursor;
  let value = 0;
  let digits = 0;
  let valid = true;
  let at = cursor.at;
  for (; at < end && buffer[at] !== space; at++) {
    const digit = (buffer[at] as number) - 0x30;
    if (digit < 0 || digit >= radix) valid = false;
    value = value * radix + digit;
    digits++;
  }
  cursor.at = at + 1;
  return valid && digits > 0 && digits <= maxDigits ? value : -1;
}

/**
 * `%T@` is seconds, a dot and the fraction, which find prints with nanoseconds and a trailing
 * zero: read as two numbers, seconds up to the dot, then nanoseconds up to the space. Each is -1
 * unless the text gives it exactly (a time before 1970, a fraction of fewer than 9 digits or with
 * more after them than zeros), and a time with a -1 matches no stamp.
 */
function readSeconds(cursor: Cursor): number {
  const { buffer, end } = cursor;
  let at = cursor.at;
  let seconds = 0;
  let digits = 0;
  let valid = true;
  for (; at < end && buffer[at] !== dot && buffer[at] !== space; at++) {
    const digit = (buffer[at] as number) - 0x30;
    if (digit < 0 || digit > 9) valid = false;
    seconds = seconds * 10 + digit;
    digits++;
  }
  // Left on the dot, or on the space when there is no fraction (`readNanoseconds` passes it).
  cursor.at = at;
  return valid && digits > 0 && digits <= maxDigits ? seconds : -1;
}

function readNanoseconds(cursor: Cursor): number {
  const { buffer, end } = cursor;
  let at = cursor.at;
  let nanoseconds = 0;
  let fraction = 0;
  let valid = at < end && buffer[at] === dot;
  if (valid)
    for (at++; at < end && buffer[at] !== space; at++) {
      const digit = (buffer[at] as number) - 0x30;
      if (digit < 0 || digit > 9 || (fraction >= 9 && digit !== 0)) valid = false;
      if (fraction < 9) nanoseconds = nanoseconds * 10 + digit;
      fraction++;
    }
  cursor.at = at + 1;
  return valid && fraction >= 9 ? nanoseconds : -1;
}
