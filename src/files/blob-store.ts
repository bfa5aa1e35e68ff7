import { and, eq } from "drizzle-orm";
import { createHash } from "node:crypto";
import type { DbExecutor } from "../db/client.js";
import { contentBlobs } from "../db/schema.js";

/** Content-addressed blobs, one row per tenant and digest (SPEC F1). */
export async function putBlob(db: DbExecutor, tenantId: string, content: Buffer): Promise<string> {
  const digest = createHash("sha256").update(content).digest("hex");
  await db.insert(contentBlobs).values({ tenantId, sha256: digest, size: content.length, bytes: content }).onConflictDoNothing();
  return digest;
}

export async function getBlob(db: DbExecutor, tenantId: string, digest: string): Promise<Buffer | undefined> {
  const [row] = await db
    .select({ bytes: contentBlobs.bytes })
    .from(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), eq(contentBlobs.sha256, digest)));
  return row?.bytes;
}
