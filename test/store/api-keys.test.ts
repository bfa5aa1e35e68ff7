import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKeyId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** `store.apiKeys`: a key is found by its hash only while it is not revoked (SPEC D8), and only for its tenant. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

async function tenantWithKey() {
  const hash = randomBytes(16).toString("hex");
  const tenant = await db.store.tenants.insertTenantWithKey("t", { hash, prefix: "foya_t" });
  const [key] = await db.query<{ id: ApiKeyId }>("select id from api_keys where tenant_id = $1", [tenant.id]);
  if (!key) throw new Error("no key");
  return { tenantId: tenant.id, keyId: key.id, hash };
}

/** No statement revokes a key yet (the operator does it in SQL): set the column the lookups guard on. */
const revoke = (keyId: ApiKeyId) => db.query("update api_keys set revoked_at = now() where id = $1", [keyId]);

describe("store.apiKeys", () => {
  it("D8: a live key is found by its hash, never by its id or another string", async () => {
    const { tenantId, keyId, hash } = await tenantWithKey();
    expect(await db.store.apiKeys.liveApiKeyByHash(hash)).toEqual({ id: keyId, tenantId });
    expect(await db.store.apiKeys.liveApiKeyByHash(keyId)).toBeUndefined();
    expect(await db.store.apiKeys.liveApiKeyByHash(hash.toUpperCase())).toBeUndefined();
  });

  it("D8, S10: a key of another tenant is not this tenant's minting key", async () => {
    const mine = await tenantWithKey();
    const other = await tenantWithKey();
    expect(await db.store.apiKeys.liveApiKeyOfTenant(mine.tenantId, mine.keyId)).toEqual({ id: mine.keyId });
    expect(await db.store.apiKeys.liveApiKeyOfTenant(other.tenantId, mine.keyId)).toBeUndefined();
  });

  it("D8, S10: a revoked key authenticates nothing and mints nothing", async () => {
    const { tenantId, keyId, hash } = await tenantWithKey();
    await revoke(keyId);
    expect(await db.store.apiKeys.liveApiKeyByHash(hash)).toBeUndefined();
    expect(await db.store.apiKeys.liveApiKeyOfTenant(tenantId, keyId)).toBeUndefined();
  });
});
