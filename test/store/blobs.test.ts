import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TenantId } from "../../src/ids.js";
import { sha256 } from "../../src/store/blobs.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/**
 * `store.blobs`: content-addressed bytes, one header row per tenant and digest (SPEC F1), read only
 * by their tenant (D8); a large blob's chunks in `content_blob_chunks`, read only once complete (W1).
 */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const rows = async (tenantId: string) =>
  db.query<{ sha256: string; size: string }>("select sha256, size::text from content_blobs where tenant_id = $1", [tenantId]);

describe("store.blobs", () => {
  it("F1: the same bytes stored twice answer the same digest and keep one row", async () => {
    const { tenantId } = await db.newSession();
    const content = Buffer.from("hello blob");
    const first = await db.store.blobs.putBlob(tenantId, content);
    const second = await db.store.blobs.putBlob(tenantId, Buffer.from("hello blob"));
    expect(first).toBe(sha256(content));
    expect(second).toBe(first);
    expect(await rows(tenantId)).toEqual([{ sha256: first, size: String(content.length) }]);
    expect(await db.store.blobs.getBlob(tenantId, first)).toEqual(content);
  });

  it("D4, F1: concurrent puts of the same bytes (a redelivered job) neither fail nor duplicate", async () => {
    const { tenantId } = await db.newSession();
    const content = Buffer.from("raced");
    const digests = await Promise.all([1, 2, 3].map(() => db.store.blobs.putBlob(tenantId, content)));
    expect(new Set(digests).size).toBe(1);
    expect(await rows(tenantId)).toHaveLength(1);
  });

  it("D8: another tenant reads none of a tenant's blobs; the same bytes of two tenants are two rows", async () => {
    const mine = await db.newSession();
    const other = await db.newSession();
    const content = Buffer.from("shared bytes");
    const digest = await db.store.blobs.putBlob(mine.tenantId, content);
    expect(await db.store.blobs.getBlob(other.tenantId, digest)).toBeUndefined();
    expect(await db.store.blobs.putBlob(other.tenantId, content)).toBe(digest);
    expect(await rows(mine.tenantId)).toHaveLength(1);
    expect(await rows(other.tenantId)).toHaveLength(1);
    expect(await db.store.blobs.getBlob(mine.tenantId, sha256(Buffer.from("never stored")))).toBeUndefined();
  });

  const stored = async (tenantId: TenantId) => Number(await db.store.tenantAdmission.storedBytes(tenantId));
  const digestOf = (bytes: Buffer) => sha256(bytes);

  it("W1: a chunked blob whose writer stopped half-way is never read, counts in storageBytes, and the next writer finishes it", async () => {
    const { tenantId } = await db.newSession();
    const content = randomBytes(10_000);
    const digest = digestOf(content);
    const start = await db.store.blobs.beginChunkedBlob(tenantId, {
      sha256: digest,
      size: content.length,
      chunkBytes: 4096,
      limitBytes: 0,
    });
    expect(start).toEqual({ kind: "write", chunkBytes: 4096 });
    await db.store.blobs.putBlobChunk(tenantId, digest, 0, content.subarray(0, 4096));
    // The writer dies here: nothing reads the blob, though its size is counted (it holds storage).
    expect(await db.store.blobs.storedDigests(tenantId, [digest])).toEqual(new Set());
    expect(await db.store.blobs.getBlobs(tenantId, [digest])).toEqual(new Map());
    expect(await db.store.blobs.getBlob(tenantId, digest)).toBeUndefined();
    expect(await stored(tenantId)).toBe(content.length);
    // The next writer is told to write, at the header's chunk length, whatever its own.
    expect(
      await db.store.blobs.beginChunkedBlob(tenantId, { sha256: digest, size: content.length, chunkBytes: 8192, limitBytes: 0 }),
    ).toEqual({ kind: "write", chunkBytes: 4096 });
    for (let index = 0; index * 4096 < content.length; index++)
      await db.store.blobs.putBlobChunk(tenantId, digest, index, content.subarray(index * 4096, (index + 1) * 4096));
    await db.store.blobs.completeBlob(tenantId, digest);
    expect(await db.store.blobs.getBlobs(tenantId, [digest])).toEqual(
      new Map([[digest, { kind: "chunked", size: content.length, chunkBytes: 4096 }]]),
    );
    expect(await db.store.blobs.getBlob(tenantId, digest)).toEqual(content);
    expect((await db.store.blobs.blobChunks(tenantId, digest, 1, 5)).map((chunk) => chunk.length)).toEqual([4096, 10_000 - 8192]);
    expect(
      await db.store.blobs.beginChunkedBlob(tenantId, { sha256: digest, size: content.length, chunkBytes: 4096, limitBytes: 0 }),
    ).toEqual({ kind: "present" });
    expect(await stored(tenantId)).toBe(content.length);
  });

  it("X5: a blob that would take the tenant past its storageBytes is refused before any byte is written; one it has is present", async () => {
    const { tenantId } = await db.newSession();
    const small = randomBytes(600);
    expect(await db.store.blobs.putWholeBlob(tenantId, { sha256: digestOf(small), bytes: small, limitBytes: 1000 })).toBe("stored");
    const next = randomBytes(600);
    expect(await db.store.blobs.putWholeBlob(tenantId, { sha256: digestOf(next), bytes: next, limitBytes: 1000 })).toBe("over_quota");
    expect(
      await db.store.blobs.beginChunkedBlob(tenantId, { sha256: digestOf(next), size: 600, chunkBytes: 256, limitBytes: 1000 }),
    ).toEqual({ kind: "over_quota" });
    expect(await db.store.blobs.putWholeBlob(tenantId, { sha256: digestOf(small), bytes: small, limitBytes: 1000 })).toBe("present");
    expect(await db.query("select 1 from content_blob_chunks where tenant_id = $1", [tenantId])).toEqual([]);
    expect(await stored(tenantId)).toBe(600);
  });

  it("F1, W1: the same content put whole over a chunked blob gives the row its bytes, so readers of whole rows (artifacts) find them", async () => {
    const { tenantId } = await db.newSession();
    const content = randomBytes(5000);
    const digest = digestOf(content);
    await db.store.blobs.beginChunkedBlob(tenantId, { sha256: digest, size: content.length, chunkBytes: 4096, limitBytes: 0 });
    await db.store.blobs.putBlobChunk(tenantId, digest, 0, content.subarray(0, 4096));
    await db.store.blobs.putBlobChunk(tenantId, digest, 1, content.subarray(4096));
    await db.store.blobs.completeBlob(tenantId, digest);
    expect(await db.store.blobs.putBlob(tenantId, content)).toBe(digest);
    expect(await db.store.blobs.getBlobs(tenantId, [digest])).toEqual(new Map([[digest, { kind: "whole", bytes: content }]]));
    expect(await rows(tenantId)).toEqual([{ sha256: digest, size: String(content.length) }]);
  });

  it("D8: another tenant reads none of a tenant's chunks", async () => {
    const mine = await db.newSession();
    const other = await db.newSession();
    const content = randomBytes(5000);
    const digest = digestOf(content);
    await db.store.blobs.beginChunkedBlob(mine.tenantId, { sha256: digest, size: content.length, chunkBytes: 4096, limitBytes: 0 });
    await db.store.blobs.putBlobChunk(mine.tenantId, digest, 0, content.subarray(0, 4096));
    await db.store.blobs.putBlobChunk(mine.tenantId, digest, 1, content.subarray(4096));
    await db.store.blobs.completeBlob(mine.tenantId, digest);
    expect(await db.store.blobs.storedDigests(other.tenantId, [digest])).toEqual(new Set());
    expect(await db.store.blobs.blobChunks(other.tenantId, digest, 0, 2)).toEqual([]);
    expect(await db.query("select distinct tenant_id from content_blob_chunks where sha256 = $1", [digest])).toEqual([
      { tenant_id: mine.tenantId },
    ]);
  });
});
