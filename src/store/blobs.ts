import { and, asc, eq, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import { createHash } from "node:crypto";
import type { Database, DbExecutor } from "../db/client.js";
import { artifacts, contentBlobChunks, contentBlobs } from "../db/schema.js";
import type { PgColumn } from "drizzle-orm/pg-core";
import { repository } from "./repository.js";
import { col } from "./sql-text.js";
import type { TenantId } from "../ids.js";

/**
 * Content-addressed blobs (SPEC F1, W1), one header row per tenant and digest in `content_blobs`.
 * A blob is kept in that one row (`bytes`), or, when large, in `content_blob_chunks` (index 0,
 * 1, ...; every chunk `chunk_bytes` long but the last). A chunked blob's header is written first,
 * `complete = false`, so its size counts in the tenant's storageBytes while its chunks are
 * written; it is read only once `complete`. A writer killed half-way leaves an incomplete blob
 * that nothing reads and that the next put of the same content finishes. Streaming in and out,
 * with the digest checked both ways: `src/blobs/`.
 */

/**
 * Largest version of a file kept whole in the blob store (F1). A larger one is
 * recorded by its digest only (write replacing it, delete): that change cannot
 * be reverted. `edit` and revert need the content whole and refuse past it.
 */
export const maxRecordedFileBytes = 64 * 1024 * 1024;

export function sha256(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/** A complete blob as stored: its bytes in the header row, or the layout of its chunks. */
export type StoredBlob = { kind: "whole"; bytes: Buffer } | { kind: "chunked"; size: number; chunkBytes: number };

/** What a put did: stored it now, found it stored already, or refused it as past the tenant's quota. */
export type BlobPutOutcome = "stored" | "present" | "over_quota";

/** A chunked put's start: write the chunks (at the header's chunk length), or nothing to do. */
export type ChunkedBlobStart = { kind: "write"; chunkBytes: number } | { kind: "present" } | { kind: "over_quota" };

/** Bytes the tenant keeps: blob sizes (complete or being written) and artifacts (SPEC X5 storageBytes). */
export function tenantStoredBytes(tenantId: TenantId): SQL {
  return sql`((select coalesce(sum(${contentBlobs.size}), 0) from ${contentBlobs} where ${contentBlobs.tenantId} = ${tenantId})
          + (select coalesce(sum(${artifacts.size}), 0) from ${artifacts} where ${artifacts.tenantId} = ${tenantId}))`;
}

/** A column's bare name, for an insert's column list (drizzle's `${column}` is qualified by its table there). */
const name = (column: PgColumn): SQL => sql.raw(col(column));

/** Whether `size` more bytes keep the tenant within `limitBytes` (0: no limit); read, not locked, so concurrent puts may pass it together. */
function fitsQuota(tenantId: TenantId, size: number, limitBytes: number): SQL {
  return limitBytes === 0 ? sql`true` : sql`${tenantStoredBytes(tenantId)} + ${size} <= ${limitBytes}`;
}

/** Content-addressed blobs kept in one row (SPEC F1); unlimited by the quota, as file-change records and artifacts always were. */
export async function putBlob(db: DbExecutor, tenantId: TenantId, content: Buffer): Promise<string> {
  const digest = sha256(content);
  await putWholeBlob(db as Database, tenantId, { sha256: digest, bytes: content, limitBytes: 0 });
  return digest;
}

/**
 * A blob in one row, its digest already checked by the caller. Over a blob stored in chunks (or
 * being written) the row takes the bytes too, so readers of whole rows (artifacts) find them.
 */
async function putWholeBlob(
  db: Database,
  tenantId: TenantId,
  blob: { sha256: string; bytes: Buffer; limitBytes: number },
): Promise<BlobPutOutcome> {
  const { rows } = await db.execute<{ inserted: boolean }>(sql`
    insert into ${contentBlobs} (${name(contentBlobs.tenantId)}, ${name(contentBlobs.sha256)}, ${name(contentBlobs.size)}, ${name(contentBlobs.bytes)})
    select ${tenantId}, ${blob.sha256}, ${blob.bytes.length}, ${blob.bytes}
    where exists (select 1 from ${contentBlobs} where ${contentBlobs.tenantId} = ${tenantId} and ${contentBlobs.sha256} = ${blob.sha256})
       or ${fitsQuota(tenantId, blob.bytes.length, blob.limitBytes)}
    on conflict (${name(contentBlobs.tenantId)}, ${name(contentBlobs.sha256)})
      do update set ${name(contentBlobs.bytes)} = excluded.${name(contentBlobs.bytes)}, ${name(contentBlobs.complete)} = true
      where ${contentBlobs.bytes} is null
    returning (xmax = 0) as inserted`);
  if (rows[0]?.inserted) return "stored";
  if (rows.length > 0) return "present";
  return (await headerOf(db, tenantId, blob.sha256)) ? "present" : "over_quota";
}

async function headerOf(db: DbExecutor, tenantId: TenantId, digest: string) {
  const [row] = await db
    .select({
      complete: contentBlobs.complete,
      chunkBytes: contentBlobs.chunkBytes,
      whole: sql<boolean>`${contentBlobs.bytes} is not null`,
    })
    .from(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), eq(contentBlobs.sha256, digest)));
  return row;
}

/**
 * Starts a chunked blob: its header row, incomplete, if the tenant's quota has room for its size.
 * An incomplete header left by a writer that died is taken over, at its chunk length.
 */
async function beginChunkedBlob(
  db: Database,
  tenantId: TenantId,
  blob: { sha256: string; size: number; chunkBytes: number; limitBytes: number },
): Promise<ChunkedBlobStart> {
  const inserted = await db.execute(sql`
    insert into ${contentBlobs} (${name(contentBlobs.tenantId)}, ${name(contentBlobs.sha256)}, ${name(contentBlobs.size)}, ${name(contentBlobs.chunkBytes)}, ${name(contentBlobs.complete)})
    select ${tenantId}, ${blob.sha256}, ${blob.size}, ${blob.chunkBytes}, false
    where ${fitsQuota(tenantId, blob.size, blob.limitBytes)}
    on conflict (${name(contentBlobs.tenantId)}, ${name(contentBlobs.sha256)}) do nothing
    returning 1`);
  if (inserted.rows.length > 0) return { kind: "write", chunkBytes: blob.chunkBytes };
  const header = await headerOf(db, tenantId, blob.sha256);
  if (!header) return { kind: "over_quota" };
  if (header.complete) return { kind: "present" };
  return { kind: "write", chunkBytes: header.chunkBytes ?? blob.chunkBytes };
}

/** One chunk of a blob being written; written again (a writer taking over) it replaces what was there. */
async function putBlobChunk(db: DbExecutor, tenantId: TenantId, digest: string, chunkIndex: number, bytes: Buffer): Promise<void> {
  await db
    .insert(contentBlobChunks)
    .values({ tenantId, sha256: digest, chunkIndex, bytes })
    .onConflictDoUpdate({ target: [contentBlobChunks.tenantId, contentBlobChunks.sha256, contentBlobChunks.chunkIndex], set: { bytes } });
}

/** After every chunk is written: the blob becomes readable. */
async function completeBlob(db: DbExecutor, tenantId: TenantId, digest: string): Promise<void> {
  await db
    .update(contentBlobs)
    .set({ complete: true })
    .where(and(eq(contentBlobs.tenantId, tenantId), eq(contentBlobs.sha256, digest)));
}

/** A chunked blob whose content did not match (a file that changed while read) is dropped, chunks and all, while still incomplete. */
async function dropIncompleteBlob(db: DbExecutor, tenantId: TenantId, digest: string): Promise<void> {
  await db
    .delete(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), eq(contentBlobs.sha256, digest), eq(contentBlobs.complete, false)));
}

/** Chunks `from` to `from + count - 1` of a complete blob, in order (fewer at its end). */
async function blobChunks(db: DbExecutor, tenantId: TenantId, digest: string, from: number, count: number): Promise<Buffer[]> {
  const rows = await db
    .select({ bytes: contentBlobChunks.bytes })
    .from(contentBlobChunks)
    .where(
      and(
        eq(contentBlobChunks.tenantId, tenantId),
        eq(contentBlobChunks.sha256, digest),
        gte(contentBlobChunks.chunkIndex, from),
        lt(contentBlobChunks.chunkIndex, from + count),
      ),
    )
    .orderBy(asc(contentBlobChunks.chunkIndex));
  return rows.map((row) => row.bytes);
}

/** A complete blob's content whole (revert needs it so; at most `maxRecordedFileBytes` there), chunks joined. */
async function getBlob(db: DbExecutor, tenantId: TenantId, digest: string): Promise<Buffer | undefined> {
  const stored = (await getBlobs(db, tenantId, [digest])).get(digest);
  if (!stored) return undefined;
  if (stored.kind === "whole") return stored.bytes;
  const chunks = await blobChunks(db, tenantId, digest, 0, Math.ceil(stored.size / stored.chunkBytes));
  const bytes = Buffer.concat(chunks);
  return bytes.length === stored.size && sha256(bytes) === digest ? bytes : undefined;
}

/** Several complete blobs of a tenant in one query (a rebuild asks for many at once); a digest not stored whole is absent. */
async function getBlobs(db: DbExecutor, tenantId: TenantId, digests: readonly string[]): Promise<Map<string, StoredBlob>> {
  if (digests.length === 0) return new Map();
  const rows = await db
    .select({ sha256: contentBlobs.sha256, size: contentBlobs.size, bytes: contentBlobs.bytes, chunkBytes: contentBlobs.chunkBytes })
    .from(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), eq(contentBlobs.complete, true), inArray(contentBlobs.sha256, [...new Set(digests)])));
  const found = new Map<string, StoredBlob>();
  for (const row of rows) {
    if (row.bytes) found.set(row.sha256, { kind: "whole", bytes: row.bytes });
    else if (row.chunkBytes) found.set(row.sha256, { kind: "chunked", size: row.size, chunkBytes: row.chunkBytes });
  }
  return found;
}

/** Which of these digests the tenant has a complete blob for (one query, no content read). */
async function storedDigests(db: DbExecutor, tenantId: TenantId, digests: readonly string[]): Promise<Set<string>> {
  if (digests.length === 0) return new Set();
  const rows = await db
    .select({ sha256: contentBlobs.sha256 })
    .from(contentBlobs)
    .where(and(eq(contentBlobs.tenantId, tenantId), eq(contentBlobs.complete, true), inArray(contentBlobs.sha256, [...new Set(digests)])));
  return new Set(rows.map((row) => row.sha256));
}

/** `store.blobs`. */
export const blobsRepository = repository({
  db: {
    putBlob,
    putWholeBlob,
    beginChunkedBlob,
    putBlobChunk,
    completeBlob,
    dropIncompleteBlob,
    blobChunks,
    getBlob,
    getBlobs,
    storedDigests,
  },
});
