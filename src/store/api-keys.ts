import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { apiKeys } from "../db/schema.js";
import { repository } from "./repository.js";
import type { ApiKeyId, TenantId } from "../ids.js";

/** The unrevoked API key with this hash, and its tenant (SPEC D8: keys are stored hashed); undefined for none. */
async function liveApiKeyByHash(db: Database, keyHash: string): Promise<{ id: ApiKeyId; tenantId: TenantId } | undefined> {
  const [row] = await db
    .select({ id: apiKeys.id, tenantId: apiKeys.tenantId })
    .from(apiKeys)
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)));
  return row;
}

/** This tenant's API key by id if it is not revoked (a stream token's minting key, SPEC S10); undefined otherwise. */
async function liveApiKeyOfTenant(db: Database, tenantId: TenantId, id: ApiKeyId): Promise<{ id: ApiKeyId } | undefined> {
  const [row] = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.tenantId, tenantId), isNull(apiKeys.revokedAt)));
  return row;
}

/** `store.apiKeys`. */
export const apiKeysRepository = repository({
  db: { liveApiKeyByHash, liveApiKeyOfTenant },
});
