import { createHash } from "node:crypto";
import { sha256, type StoredBlob } from "../store/blobs.js";
import type { Store } from "../store/store.js";
import type { TenantId } from "../ids.js";
import { type BlobPut, BlobReadError, type BlobStore, type OpenedBlob } from "./blob-store.js";
import { collectUpTo, fixedChunks } from "./fixed-chunks.js";

/**
 * The blob store in Postgres (`src/store/blobs.ts`, tables `content_blobs` and
 * `content_blob_chunks`): a blob up to `chunkBytes` is one row; a larger one is an incomplete
 * header row (counted against the quota at once), its chunks, then the header marked complete.
 */
export interface PostgresBlobStoreOptions {
  /** Length of a new chunked blob's chunks (`FOYA_BLOB_CHUNK_BYTES`). */
  chunkBytes: number;
  /** Called after each chunk is written (a crash test's failpoint). */
  afterChunk?: (chunkIndex: number) => void;
}

/** Chunks a read asks for at once, in bytes: one query in flight while the previous one's chunks are used. */
const readAheadBytes = 4 * 1024 * 1024;

export function createPostgresBlobStore(store: Pick<Store, "blobs">, options: PostgresBlobStoreOptions): BlobStore {
  const blobs = store.blobs;
  return {
    async put(tenantId, expected, content, { limitBytes = 0 } = {}): Promise<BlobPut> {
      if (expected.size <= options.chunkBytes) {
        const bytes = await collectUpTo(content, expected.size);
        if (bytes === null || bytes.length !== expected.size || sha256(bytes) !== expected.sha256) return { kind: "mismatch" };
        return { kind: await blobs.putWholeBlob(tenantId, { sha256: expected.sha256, bytes, limitBytes }) };
      }
      const start = await blobs.beginChunkedBlob(tenantId, { ...expected, chunkBytes: options.chunkBytes, limitBytes });
      if (start.kind !== "write") return start;
      const hash = createHash("sha256");
      let written = 0;
      let index = 0;
      for await (const chunk of fixedChunks(content, start.chunkBytes)) {
        written += chunk.length;
        // Longer than announced: the file grew.
        if (written > expected.size) return dropped(store, tenantId, expected.sha256);
        hash.update(chunk);
        await blobs.putBlobChunk(tenantId, expected.sha256, index, chunk);
        options.afterChunk?.(index);
        index++;
      }
      if (written !== expected.size || hash.digest("hex") !== expected.sha256) return dropped(store, tenantId, expected.sha256);
      await blobs.completeBlob(tenantId, expected.sha256);
      return { kind: "stored" };
    },
    ...createPostgresBlobReader(store),
  };
}

/** Content that was not the blob announced leaves nothing: its incomplete header and chunks go (a changing file's digest is seldom put again). */
async function dropped(store: Pick<Store, "blobs">, tenantId: TenantId, digest: string): Promise<BlobPut> {
  await store.blobs.dropIncompleteBlob(tenantId, digest);
  return { kind: "mismatch" };
}

/** The reading half, which needs no settings: a rebuild reads each blob at the chunk length it was stored with. */
export function createPostgresBlobReader(store: Pick<Store, "blobs">): Pick<BlobStore, "has" | "open"> {
  return {
    has: (tenantId, digests) => store.blobs.storedDigests(tenantId, digests),
    async open(tenantId, digests) {
      const found = await store.blobs.getBlobs(tenantId, digests);
      const opened = new Map<string, OpenedBlob>();
      for (const [digest, stored] of found) opened.set(digest, openedBlob(store, tenantId, digest, stored));
      return opened;
    },
  };
}

function openedBlob(store: Pick<Store, "blobs">, tenantId: TenantId, digest: string, stored: StoredBlob): OpenedBlob {
  if (stored.kind === "whole") {
    const { bytes } = stored;
    return { size: bytes.length, bytes, chunks: () => verified(digest, bytes.length, [bytes]) };
  }
  const { size, chunkBytes } = stored;
  const count = Math.ceil(size / chunkBytes);
  const perRead = Math.max(1, Math.floor(readAheadBytes / chunkBytes));
  async function* read(): AsyncIterable<Buffer> {
    let next = count > 0 ? store.blobs.blobChunks(tenantId, digest, 0, perRead) : null;
    for (let from = 0; from < count; from += perRead) {
      const chunks = await (next as Promise<Buffer[]>);
      next = from + perRead < count ? store.blobs.blobChunks(tenantId, digest, from + perRead, perRead) : null;
      // A rejection of the query read ahead is thrown at its turn, not reported as unhandled meanwhile.
      next?.catch(() => {});
      const expected = Math.min(perRead, count - from);
      if (chunks.length !== expected) throw new BlobReadError(`blob ${digest}: chunks ${from}..${from + expected - 1} are not all stored`);
      for (const [offset, chunk] of chunks.entries()) {
        const index = from + offset;
        const length = index === count - 1 ? size - chunkBytes * (count - 1) : chunkBytes;
        if (chunk.length !== length) throw new BlobReadError(`blob ${digest}: chunk ${index} has ${chunk.length} bytes, not ${length}`);
        yield chunk;
      }
    }
  }
  return { size, bytes: null, chunks: () => verified(digest, size, read()) };
}

/** The chunks as they pass, their total length and digest checked after the last. */
async function* verified(digest: string, size: number, chunks: Iterable<Buffer> | AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  const hash = createHash("sha256");
  let total = 0;
  for await (const chunk of chunks) {
    hash.update(chunk);
    total += chunk.length;
    yield chunk;
  }
  if (total !== size || hash.digest("hex") !== digest) throw new BlobReadError(`blob ${digest} does not read back as its digest`);
}
