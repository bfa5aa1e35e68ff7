import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlobReadError } from "../../src/blobs/blob-store.js";
import { createPostgresBlobStore } from "../../src/blobs/postgres-blob-store.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** The Postgres blob store (SPEC W1): content streamed in and out in chunks, its digest checked both ways. */
let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const chunkBytes = 64 * 1024;
const digestOf = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** The content in pieces of another length than the chunks, as a file is read. */
async function* pieces(content: Buffer, size = 100_000): AsyncIterable<Buffer> {
  for (let offset = 0; offset < content.length; offset += size) yield content.subarray(offset, offset + size);
}

async function readAll(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

describe("the Postgres blob store", () => {
  it("W1: a blob of many chunks is stored with no row longer than a chunk and reads back byte-identical", async () => {
    const { tenantId } = await db.newSession();
    const blobs = createPostgresBlobStore(db.store, { chunkBytes });
    const content = randomBytes(5 * 1024 * 1024 + 123);
    const expected = { sha256: digestOf(content), size: content.length };
    expect(await blobs.put(tenantId, expected, pieces(content))).toEqual({ kind: "stored" });
    const [layout] = await db.query<{ chunks: number; longest: number; header: number | null }>(
      `select count(*)::int as chunks, max(octet_length(c.bytes))::int as longest,
              (select octet_length(bytes) from content_blobs where tenant_id = $1 and sha256 = $2) as header
       from content_blob_chunks c where c.tenant_id = $1 and c.sha256 = $2`,
      [tenantId, expected.sha256],
    );
    expect(layout).toEqual({ chunks: Math.ceil(content.length / chunkBytes), longest: chunkBytes, header: null });
    const opened = (await blobs.open(tenantId, [expected.sha256])).get(expected.sha256);
    expect(opened).toMatchObject({ size: content.length, bytes: null });
    expect((await readAll(opened!.chunks())).equals(content)).toBe(true);
    expect(Number(await db.store.tenantAdmission.storedBytes(tenantId))).toBe(content.length);
  });

  it("W1: the same content again is present and not read; a small blob is one row", async () => {
    const { tenantId } = await db.newSession();
    const blobs = createPostgresBlobStore(db.store, { chunkBytes });
    const content = randomBytes(200_000);
    const expected = { sha256: digestOf(content), size: content.length };
    await blobs.put(tenantId, expected, pieces(content));
    let read = false;
    const untouched = (async function* () {
      read = true;
      yield content;
    })();
    expect(await blobs.put(tenantId, expected, untouched)).toEqual({ kind: "present" });
    expect(read).toBe(false);
    const small = Buffer.from("small");
    expect(await blobs.put(tenantId, { sha256: digestOf(small), size: small.length }, pieces(small))).toEqual({ kind: "stored" });
    expect((await blobs.open(tenantId, [digestOf(small)])).get(digestOf(small))?.bytes).toEqual(small);
    expect(await blobs.has(tenantId, [digestOf(small), expected.sha256, digestOf(Buffer.from("never"))])).toEqual(
      new Set([digestOf(small), expected.sha256]),
    );
  });

  it("W1: content that is not what was announced (changed while read, or longer) is never made visible", async () => {
    const { tenantId } = await db.newSession();
    const blobs = createPostgresBlobStore(db.store, { chunkBytes });
    const content = randomBytes(300_000);
    const expected = { sha256: digestOf(content), size: content.length };
    const changed = Buffer.from(content);
    changed[200_000] = (changed[200_000] as number) ^ 0xff;
    expect(await blobs.put(tenantId, expected, pieces(changed))).toEqual({ kind: "mismatch" });
    expect(await blobs.put(tenantId, expected, pieces(Buffer.concat([content, Buffer.from("x")])))).toEqual({ kind: "mismatch" });
    expect(await blobs.put(tenantId, expected, pieces(content.subarray(1)))).toEqual({ kind: "mismatch" });
    const small = Buffer.from("small");
    expect(await blobs.put(tenantId, { sha256: digestOf(small), size: 5 }, pieces(Buffer.from("other")))).toEqual({ kind: "mismatch" });
    expect(await blobs.has(tenantId, [expected.sha256, digestOf(small)])).toEqual(new Set());
    // Nothing left behind, nor counted: no header, no chunk.
    expect(await db.query("select 1 from content_blob_chunks where tenant_id = $1", [tenantId])).toEqual([]);
    expect(Number(await db.store.tenantAdmission.storedBytes(tenantId))).toBe(0);
    expect(await blobs.put(tenantId, expected, pieces(content))).toEqual({ kind: "stored" });
    const opened = (await blobs.open(tenantId, [expected.sha256])).get(expected.sha256);
    expect((await readAll(opened!.chunks())).equals(content)).toBe(true);
  });

  it("W1: a blob whose chunks were changed or lost in the store fails its read, never passing wrong bytes as its digest", async () => {
    const { tenantId } = await db.newSession();
    const blobs = createPostgresBlobStore(db.store, { chunkBytes });
    const content = randomBytes(300_000);
    const digest = digestOf(content);
    await blobs.put(tenantId, { sha256: digest, size: content.length }, pieces(content));
    await db.query("update content_blob_chunks set bytes = $3 where tenant_id = $1 and sha256 = $2 and chunk_index = 2", [
      tenantId,
      digest,
      randomBytes(chunkBytes),
    ]);
    const changed = (await blobs.open(tenantId, [digest])).get(digest)!;
    await expect(readAll(changed.chunks())).rejects.toBeInstanceOf(BlobReadError);
    await db.query("delete from content_blob_chunks where tenant_id = $1 and sha256 = $2 and chunk_index = 3", [tenantId, digest]);
    const lost = (await blobs.open(tenantId, [digest])).get(digest)!;
    await expect(readAll(lost.chunks())).rejects.toThrow(/not all stored/);
  });

  it("X5: a blob past the quota is refused whole, none of its content read", async () => {
    const { tenantId } = await db.newSession();
    const blobs = createPostgresBlobStore(db.store, { chunkBytes });
    const content = randomBytes(300_000);
    const expected = { sha256: digestOf(content), size: content.length };
    expect(await blobs.put(tenantId, expected, pieces(content), { limitBytes: 299_999 })).toEqual({ kind: "over_quota" });
    expect(await db.query("select 1 from content_blobs where tenant_id = $1", [tenantId])).toEqual([]);
    expect(await blobs.put(tenantId, expected, pieces(content), { limitBytes: 300_000 })).toEqual({ kind: "stored" });
  });
});
