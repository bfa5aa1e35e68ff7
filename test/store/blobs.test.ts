import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256 } from "../../src/store/blobs.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** `store.blobs`: content-addressed bytes, one row per tenant and digest (SPEC F1), read only by their tenant (D8). */

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
});
