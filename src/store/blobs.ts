import { and, eq, inArray } from "drizzle-orm";
import { createHash } from "node:crypto";
import type { DbExecutor } from "../db/client.js";
import { contentBlobs } from "../db/schema.js";
import { repository } from "./repository.js";
import type { TenantId } from "../ids.js";

/**
 * Largest version of a file kept whole in the blob store (F1). A larger one is
 * recorded by its digest only (write replacing it, delete): that change cannot
 * be reverted. `edit` and revert need the content whole and refuse past it.
 */
export const maxRecordedFileBytes = 64 * 1024 * 1024;

export function sha256(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/** Content-addressed blobs, one row per tenant and digest (SPEC F1). */
export async function putBlob(db: DbExecutor, tenantId: TenantId, content: Buffer): Promise<string> {
  const digest = sha256(content);
  await db.insert(contentBlobs).values({ tenantId, sha256: digest, size: content.length, bytes: content }).onConflictDoNothing();
  return digest;
}

async function getBlob(db: DbExecutor, tenantId: TenantId, digest: string): Promise<Buffer | undefined> {
  const [row] = await db
    .select({ bytes: contentBlobs.bytes })
    .from(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), eq(contentBlobs.sha256, digest)));
  return row?.bytes;
}

/** Several blobs of a tenant in one query (a rebuild asks for many at once); a digest not stored is absent from the map. */
async function getBlobs(db: DbExecutor, tenantId: TenantId, digests: readonly string[]): Promise<Map<string, Buffer>> {
  if (digests.length === 0) return new Map();
  const rows = await db
    .select({ sha256: contentBlobs.sha256, bytes: contentBlobs.bytes })
    .from(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), inArray(contentBlobs.sha256, [...new Set(digests)])));
  return new Map(rows.map((row) => [row.sha256, row.bytes]));
}

/** Which of these digests the tenant has a blob for (one query, no content read). */
async function storedDigests(db: DbExecutor, tenantId: TenantId, digests: readonly string[]): Promise<Set<string>> {
  if (digests.length === 0) return new Set();
  const rows = await db
    .select({ sha256: contentBlobs.sha256 })
    .from(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), inArray(contentBlobs.sha256, [...new Set(digests)])));
  return new Set(rows.map((row) => row.sha256));
}

/** `store.blobs`. */
export const blobsRepository = repository({
  db: { putBlob, getBlob, getBlobs, storedDigests },
});
