import { createHash } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { viaDescriptor, type HeldEntry } from "./descriptor-walk.js";
import { shorten } from "./path-components.js";
import { WorkspaceError, type EntryKind, type OpenedFile } from "./workspace-files.js";

/**
 * What the door does with an entry it holds open (`O_PATH`): tell what it is,
 * refuse what is not a plain file, and open it for I/O through its own
 * descriptor, never by name again.
 */

const { O_NONBLOCK, O_NOCTTY } = constants;
const readChunkBytes = 1024 * 1024;

export function ownerOf(stats: Stats): { uid: number; gid: number } {
  return { uid: stats.uid, gid: stats.gid };
}

/** Permission bits a written file may have: setuid and setgid never, whatever the model or the old file asked. */
export function safeMode(mode: number): number {
  return mode & 0o777;
}

export function kindOf(stats: Stats): EntryKind {
  if (stats.isFile()) return "file";
  if (stats.isDirectory()) return "directory";
  if (stats.isSymbolicLink()) return "symlink";
  return "special";
}

export function refuseIrregular(stats: Stats, requested: string): void {
  if (stats.isDirectory()) throw new WorkspaceError("is_directory", `"${shorten(requested)}" is a folder.`);
  if (!stats.isFile()) {
    const what = stats.isFIFO()
      ? "a FIFO"
      : stats.isSocket()
        ? "a socket"
        : stats.isCharacterDevice() || stats.isBlockDevice()
          ? "a device"
          : "not a regular file";
    throw new WorkspaceError("special_file", `"${shorten(requested)}" is ${what}; only regular files are read or written.`);
  }
  if (stats.nlink > 1) {
    throw new WorkspaceError(
      "hard_link",
      `"${shorten(requested)}" has ${stats.nlink} hard links; files with more than one are refused, as another link may be outside the workspace.`,
    );
  }
}

export function tooLarge(requested: string, size: number, maxBytes: number): WorkspaceError {
  return new WorkspaceError("too_large", `"${shorten(requested)}" is ${size} bytes; at most ${maxBytes} are handled here.`);
}

/** Opens the object a held `O_PATH` descriptor refers to, for I/O: never by name again. */
export async function reopen(entry: HeldEntry, flags: number): Promise<FileHandle> {
  return open(viaDescriptor(entry.fd), flags | O_NONBLOCK | O_NOCTTY);
}

export async function writeAll(handle: FileHandle, content: Buffer): Promise<void> {
  let written = 0;
  while (written < content.length) {
    const { bytesWritten } = await handle.write(content, written, content.length - written, written);
    written += bytesWritten;
  }
}

export function openedFile(at: string, stats: Stats, handle: FileHandle): OpenedFile {
  return {
    path: at,
    size: stats.size,
    mode: stats.mode & 0o7777,
    async *chunks(range = {}) {
      let position = range.start ?? 0;
      const end = range.end ?? Number.POSITIVE_INFINITY;
      while (position < end) {
        if (range.signal?.aborted) return;
        const buffer = Buffer.allocUnsafe(Math.min(readChunkBytes, end - position));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0) return;
        position += bytesRead;
        yield buffer.subarray(0, bytesRead);
      }
    },
    async head(length) {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, 0);
      return buffer.subarray(0, bytesRead);
    },
    close: () => handle.close(),
  };
}

/** A whole file, but never more than `maxBytes`: a file that grew past it since its size was checked is refused. */
export async function readBounded(handle: FileHandle, maxBytes: number, shown: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const want = Math.min(1024 * 1024, maxBytes + 1 - total);
    const buffer = Buffer.allocUnsafe(Math.max(want, 1));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    if (total > maxBytes)
      throw new WorkspaceError("too_large", `"${shorten(shown)}" is over ${maxBytes} bytes; at most ${maxBytes} are handled here.`);
  }
  return Buffer.concat(chunks, total);
}

/** The sha256 and size of a file too large to keep, read in bounded chunks. */
export async function digestOf(handle: FileHandle): Promise<{ sha256: string; size: number }> {
  const hash = createHash("sha256");
  const buffer = Buffer.allocUnsafe(readChunkBytes);
  let size = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, size);
    if (bytesRead === 0) return { sha256: hash.digest("hex"), size };
    hash.update(buffer.subarray(0, bytesRead));
    size += bytesRead;
  }
}
