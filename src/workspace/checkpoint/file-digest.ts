import { createHash, type Hash } from "node:crypto";
import { type BigIntStats, constants, fstatSync, openSync, readSync } from "node:fs";
import type { TimeSlices } from "../../core/time-slices.js";
import { closeQuietly, O_PATH } from "../descriptor-walk.js";
import { viaDescriptorBytes } from "../entry-path.js";

/**
 * Reading a workspace file for a checkpoint (SPEC W1, S6): the name is opened
 * `O_PATH | O_NOFOLLOW` in a folder held by descriptor (a symlink is opened as
 * itself, a FIFO or device is never opened for reading), the descriptor's own
 * fstat must say "regular file", and only then is the object reopened for
 * reading through `/proc/self/fd`, never by name again.
 *
 * Reads are synchronous, 1 MiB at a time, with a turn of the event loop
 * whenever the slice is spent: the files are usually in the page cache (a
 * tool batch just wrote them), where a trip through libuv's pool per chunk
 * costs more than the read.
 */
const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
const chunkBytes = 1024 * 1024;

/**
 * How long after its last change a file's timestamps are trusted to show its
 * next one. File systems stamp times from a clock that ticks every few
 * milliseconds: a file read in the same tick as its last write could be
 * written again, same size, with the same mtime and ctime. Such a file's
 * stamp is not kept, so the next capture reads it again (git's "racy clean").
 */
export const racyWindowNs = 50_000_000n;

export type FileRead =
  | {
      kind: "hashed";
      sha256: string;
      /** Bytes read. */
      size: number;
      /** The open file's fstat after the read. */
      stats: BigIntStats;
      /** Read whole while its stat stayed put, and long enough after its last change: its stamp may be reused. */
      settled: boolean;
    }
  /** Gone, or no longer a regular file, since it was listed. */
  | { kind: "gone" }
  /** More than one hard link, and not the workspace owner's (`SkippedEntry`). */
  | { kind: "hard_link" };

export interface ReadingContext {
  slices: TimeSlices;
  signal?: AbortSignal;
  /** One reusable buffer of the capture's. */
  buffer: Buffer;
  /** The uid that owns the workspace root: the only owner whose hard-linked files are read. */
  ownerUid: number;
}

export function readingContext(ownerUid: number, slices: TimeSlices, signal?: AbortSignal): ReadingContext {
  return { slices, signal, ownerUid, buffer: Buffer.allocUnsafe(chunkBytes) };
}

/** Hashes the regular file `name` in the folder held by `folderFd`; a file that keeps changing is hashed as last read, unsettled. */
export async function hashFileIn(folderFd: number, name: Buffer, context: ReadingContext): Promise<FileRead> {
  const fd = openRegular(folderFd, name, context.ownerUid);
  if (typeof fd !== "number") return { kind: fd };
  try {
    for (let attempt = 1; ; attempt++) {
      const before = fstatSync(fd, { bigint: true });
      const readStartNs = BigInt(Date.now()) * 1_000_000n;
      const read = await hashWhole(fd, context);
      const after = fstatSync(fd, { bigint: true });
      const steady = sameStamp(before, after) && BigInt(read.size) === after.size;
      if (steady || attempt === 3) {
        const settled = steady && after.ctimeNs + racyWindowNs < readStartNs;
        return { kind: "hashed", sha256: read.sha256, size: read.size, stats: after, settled };
      }
    }
  } finally {
    closeQuietly(fd);
  }
}

/** The file's bytes if it still has `size` bytes hashing to `sha256`; null otherwise. */
export async function readVerified(
  folderFd: number,
  name: Buffer,
  context: ReadingContext,
  expected: { size: number; sha256: string },
): Promise<Buffer | null> {
  const fd = openRegular(folderFd, name, context.ownerUid);
  if (typeof fd !== "number") return null;
  try {
    if (fstatSync(fd).size !== expected.size) return null;
    // One byte more than expected, to see a file that grew.
    const content = Buffer.allocUnsafe(expected.size + 1);
    const hash = createHash("sha256");
    let total = 0;
    for (;;) {
      const bytesRead = readSync(fd, content, total, Math.min(chunkBytes, content.length - total), total);
      if (bytesRead === 0) break;
      hash.update(content.subarray(total, total + bytesRead));
      total += bytesRead;
      if (total > expected.size) return null;
      if (context.slices.spent()) await context.slices.pause();
    }
    return total === expected.size && hash.digest("hex") === expected.sha256 ? content.subarray(0, total) : null;
  } finally {
    closeQuietly(fd);
  }
}

/**
 * The file's bytes in pieces as they are read through its descriptor (a large file is never held
 * whole): nothing when it is gone or no longer a regular file of `size` bytes, and at most one
 * byte past `size`, so the reader (the blob store) sees a file that grew. The consumer checks the
 * digest. Each piece is a buffer of its own.
 */
export async function* readPieces(
  folderFd: number,
  name: Buffer,
  context: ReadingContext,
  expected: { size: number },
): AsyncIterable<Buffer> {
  const fd = openRegular(folderFd, name, context.ownerUid);
  if (typeof fd !== "number") return;
  try {
    if (fstatSync(fd).size !== expected.size) return;
    for (let total = 0; total <= expected.size; ) {
      const piece = Buffer.allocUnsafe(Math.min(chunkBytes, expected.size + 1 - total));
      const bytesRead = readSync(fd, piece, 0, piece.length, total);
      if (bytesRead === 0) return;
      total += bytesRead;
      yield piece.subarray(0, bytesRead);
      if (context.slices.spent()) {
        context.signal?.throwIfAborted();
        await context.slices.pause();
      }
    }
  } finally {
    closeQuietly(fd);
  }
}

/**
 * Opens `name` for reading if it is a regular file now, checked on the
 * descriptor, not the name. A file with a second hard link is read only when
 * the workspace's owner owns it (it could read it anyway): another link may
 * be outside the workspace.
 */
function openRegular(folderFd: number, name: Buffer, ownerUid: number): number | "gone" | "hard_link" {
  let held: number;
  try {
    held = openSync(viaDescriptorBytes(folderFd, name), O_PATH | O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "gone";
    throw error;
  }
  try {
    const stats = fstatSync(held);
    if (!stats.isFile()) return "gone";
    if (stats.nlink > 1 && stats.uid !== ownerUid) return "hard_link";
    return openSync(viaDescriptorBytes(held), O_RDONLY | O_NONBLOCK | O_NOCTTY);
  } finally {
    closeQuietly(held);
  }
}

async function hashWhole(fd: number, context: ReadingContext): Promise<{ sha256: string; size: number }> {
  const hash: Hash = createHash("sha256");
  let size = 0;
  for (;;) {
    const bytesRead = readSync(fd, context.buffer, 0, context.buffer.length, size);
    if (bytesRead === 0) return { sha256: hash.digest("hex"), size };
    hash.update(context.buffer.subarray(0, bytesRead));
    size += bytesRead;
    if (context.slices.spent()) {
      context.signal?.throwIfAborted();
      await context.slices.pause();
    }
  }
}

function sameStamp(a: BigIntStats, b: BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}
