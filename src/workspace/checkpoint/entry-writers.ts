import { createHash } from "node:crypto";
import { closeSync, constants, fchmodSync, fchownSync, lchownSync, mkdirSync, openSync, symlinkSync, writeSync } from "node:fs";
import type { TimeSlices } from "../../core/time-slices.js";
import { childPath, type EntryPath, viaDescriptorBytes } from "../entry-path.js";
import type { FolderHandles } from "../folder-handles.js";
import { decodeByteText } from "./byte-text.js";
import { type LinkRefusal, linkRefusal } from "./link-confinement.js";
import type { TreeEntries } from "./tree-entry.js";
import type { PlannedEntry } from "./tree-plan.js";

/**
 * Writing one entry of a rebuild (SPEC W1, S6), always by name in a parent
 * folder held by descriptor (`folder-handles.ts`, opened `O_NOFOLLOW` one real
 * folder at a time), never through a path that could cross a link:
 * folders are made 0700 and given their mode at the end (`materialize.ts`),
 * files are created `O_CREAT | O_EXCL | O_NOFOLLOW` and written only with
 * bytes that hash to their digest, links are written only when they stay
 * inside (`link-confinement.ts`). Ownership is handed over before the mode is
 * set, since chown clears setuid and setgid.
 */
export interface WriteContext {
  folders: FolderHandles;
  tree: TreeEntries;
  owner: { uid: number; gid: number } | null;
  slices: TimeSlices;
  signal?: AbortSignal;
  /** Folders written so far by path, "" the root: the same EntryPath each time, so held descriptors are found again. */
  folderPaths: Map<string, EntryPath>;
}

export type WriteOutcome =
  | { kind: "written" }
  | { kind: "refused"; reason: LinkRefusal }
  | { kind: "failed"; error: "missing_blob" | "digest_mismatch" | "io_failed"; message: string };

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NOCTTY, O_NONBLOCK } = constants;
const written: WriteOutcome = { kind: "written" };
const chunkBytes = 1024 * 1024;

export function writeFolder(context: WriteContext, planned: PlannedEntry): WriteOutcome {
  const parent = parentOf(context, planned);
  if (typeof parent === "string") return ioFailed(parent);
  const name = planned.names[planned.names.length - 1] as Buffer;
  const at = viaDescriptorBytes(parent.fd, name);
  mkdirSync(at, 0o700);
  if (context.owner) lchownSync(at, context.owner.uid, context.owner.gid);
  context.folderPaths.set(planned.entry.path, childPath(parent.at, name));
  return written;
}

/** A file's content for a rebuild: whole in memory, or streamed chunk by chunk (a large file, never held whole). */
export type BlobContent = Buffer | StreamedBlob;

export interface StreamedBlob {
  size: number;
  /** The content in order; may throw (a store's read error: `code` "blob_corrupt" is answered as a digest mismatch). */
  chunks(): AsyncIterable<Buffer>;
}

export async function writeFile(context: WriteContext, planned: PlannedEntry, blob: BlobContent | null): Promise<WriteOutcome> {
  const entry = planned.entry;
  if (entry.kind !== "file") throw new Error("writeFile: not a file entry");
  if (blob === null) return { kind: "failed", error: "missing_blob", message: `The store has no blob ${entry.sha256}.` };
  const whole = Buffer.isBuffer(blob);
  if ((whole ? blob.length : blob.size) !== entry.size || (whole && (await digestInSlices(blob, context)) !== entry.sha256))
    return mismatch(entry.sha256);
  const parent = parentOf(context, planned);
  if (typeof parent === "string") return ioFailed(parent);
  const name = planned.names[planned.names.length - 1] as Buffer;
  const fd = openSync(viaDescriptorBytes(parent.fd, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0o600);
  try {
    if (whole) await writeWhole(context, fd, blob);
    // Streamed bytes are checked as they are written: a file that does not add up fails the rebuild (its folder is dropped).
    else if ((await writeStreamed(context, fd, blob)) !== entry.sha256) return mismatch(entry.sha256);
    if (context.owner) fchownSync(fd, context.owner.uid, context.owner.gid);
    fchmodSync(fd, entry.mode);
  } finally {
    closeSync(fd);
  }
  return written;
}

async function writeWhole(context: WriteContext, fd: number, blob: Buffer): Promise<void> {
  for (let offset = 0; offset < blob.length; ) {
    offset += writeSync(fd, blob, offset, Math.min(chunkBytes, blob.length - offset), offset);
    await giveTurn(context);
  }
}

/** Writes the chunks as they come and answers their sha256 (null when the store found its blob corrupt). */
async function writeStreamed(context: WriteContext, fd: number, blob: StreamedBlob): Promise<string | null> {
  const hash = createHash("sha256");
  let position = 0;
  try {
    for await (const chunk of blob.chunks()) {
      hash.update(chunk);
      for (let offset = 0; offset < chunk.length; ) {
        const count = writeSync(fd, chunk, offset, chunk.length - offset, position);
        offset += count;
        position += count;
      }
      if (position > blob.size) return null;
      await giveTurn(context);
    }
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === "blob_corrupt") return null;
    throw error;
  }
  return position === blob.size ? hash.digest("hex") : null;
}

async function giveTurn(context: WriteContext): Promise<void> {
  if (context.slices.spent()) {
    context.signal?.throwIfAborted();
    await context.slices.pause();
  }
}

function mismatch(sha256: string): WriteOutcome {
  return { kind: "failed", error: "digest_mismatch", message: `The blob given for ${sha256} does not hash to it.` };
}

export function writeLink(context: WriteContext, planned: PlannedEntry): WriteOutcome {
  const entry = planned.entry;
  if (entry.kind !== "symlink") throw new Error("writeLink: not a symlink entry");
  const target = decodeByteText(entry.target) as Buffer;
  const refusal = linkRefusal(context.tree, planned.names, target);
  if (refusal) return { kind: "refused", reason: refusal };
  const parent = parentOf(context, planned);
  if (typeof parent === "string") return ioFailed(parent);
  const at = viaDescriptorBytes(parent.fd, planned.names[planned.names.length - 1] as Buffer);
  symlinkSync(target, at);
  if (context.owner) lchownSync(at, context.owner.uid, context.owner.gid);
  return written;
}

/** A blob's sha256, a chunk at a time, the event loop given its turns: a blob may be a GiB. */
async function digestInSlices(blob: Buffer, context: WriteContext): Promise<string> {
  const hash = createHash("sha256");
  for (let offset = 0; offset < blob.length; offset += chunkBytes) {
    hash.update(blob.subarray(offset, offset + chunkBytes));
    if (context.slices.spent()) {
      context.signal?.throwIfAborted();
      await context.slices.pause();
    }
  }
  return hash.digest("hex");
}

/** The held parent folder, or why it cannot be had (changed under the rebuild: the target is not private). */
function parentOf(context: WriteContext, planned: PlannedEntry): { at: EntryPath; fd: number } | string {
  const at = context.folderPaths.get(planned.parent);
  const fd = at ? context.folders.folder(at) : null;
  if (!at || fd === null) return `The folder ${JSON.stringify(planned.parent)} written for ${JSON.stringify(planned.entry.path)} is gone.`;
  return { at, fd };
}

function ioFailed(message: string): WriteOutcome {
  return { kind: "failed", error: "io_failed", message };
}
