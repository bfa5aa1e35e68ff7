import type { TenantId } from "../ids.js";

/**
 * Where content too large for one row is kept (SPEC W1, F1, X5): blobs addressed by tenant and
 * sha256, one per tenant and digest whoever stored it (file changes, artifacts, checkpoints).
 * Content goes in and comes out as a stream, so no buffer or row ever holds a large file whole;
 * Postgres is the default and only store (`postgres-blob-store.ts`).
 *
 * Invariants every implementation keeps:
 * - A blob is visible (`has`, `open`) only once its whole content is stored; a writer that dies
 *   half-way leaves nothing any reader uses, and the next put of that content finishes it.
 * - `put` checks the content against `expected` while it streams in, and keeps it only when the
 *   length and the sha256 both match; `open`'s stream checks them again on the way out.
 * - A blob counts in the tenant's `storageBytes` (X5) from the moment its put starts.
 */
export interface BlobStore {
  /**
   * Stores `content` as the blob `expected`. The stream is read to its end only when the blob is
   * written now: a blob already stored (`present`) or refused (`over_quota`) reads none of it.
   */
  put(tenantId: TenantId, expected: BlobDescriptor, content: AsyncIterable<Buffer>, options?: BlobPutOptions): Promise<BlobPut>;
  /** Which of these digests the tenant has a complete blob for; one round trip, no content read. */
  has(tenantId: TenantId, digests: readonly string[]): Promise<Set<string>>;
  /** The tenant's complete blobs of these digests, in one round trip; a large one's content is read as it is streamed. */
  open(tenantId: TenantId, digests: readonly string[]): Promise<Map<string, OpenedBlob>>;
}

/** A blob's identity: its content's sha256 (lowercase hex) and length in bytes. */
export interface BlobDescriptor {
  sha256: string;
  size: number;
}

export interface BlobPutOptions {
  /** The tenant's storageBytes quota; 0 (the default): no limit. A blob that would take the tenant past it is refused whole. */
  limitBytes?: number;
}

export type BlobPut =
  | { kind: "stored" }
  | { kind: "present" }
  | { kind: "over_quota" }
  /** The content streamed was not `expected` (a file that changed while it was read): nothing was made visible. */
  | { kind: "mismatch" };

export interface OpenedBlob {
  size: number;
  /** The content, when it came with the answer (a blob kept in one row); null for a chunked one. */
  bytes: Buffer | null;
  /** The content in order. Throws `BlobReadError` at the end when it does not add up to its size and digest. */
  chunks(): AsyncIterable<Buffer>;
}

/** A stored blob that does not read back as its digest: missing chunks, or bytes changed under it. */
export class BlobReadError extends Error {
  readonly code = "blob_corrupt";
}
