import { createHash } from "node:crypto";
import { and, eq, inArray } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { artifacts, contentBlobs } from "../db/schema.js";
import { putBlob } from "../store/blobs.js";
import { repository } from "./repository.js";
import type { ArtifactId, SessionId, TenantId } from "../ids.js";

/**
 * The session artifact store (SPEC I1, I2): bytes live content-addressed in
 * `content_blobs` (once per tenant and digest), and an `artifacts` row names
 * them for one session with their media type. Every read is tenant-scoped, so
 * another tenant's id is indistinguishable from a missing one (D8).
 */

/** Largest artifact the engine stores; a tool answering more gets an is_error result instead. */
export const maxArtifactBytes = 20 * 1024 * 1024;

export interface ArtifactScope {
  tenantId: TenantId;
  sessionId: SessionId;
}

export interface ArtifactMeta {
  id: ArtifactId;
  sessionId: SessionId;
  mediaType: string;
  size: number;
  sha256: string;
  createdAt: Date;
}

/**
 * The artifact id of these bytes in this session: derived from session, digest and
 * media type, so storing the same bytes again (or a redelivered job storing them
 * twice, even concurrently) answers the same id without a lookup or a race.
 */
function artifactIdFor(sessionId: SessionId, sha256: string, mediaType: string): ArtifactId {
  const digest = createHash("sha256").update(`${sessionId}\u0000${sha256}\u0000${mediaType}`).digest();
  return `art_${digest.subarray(0, 12).toString("base64url")}`;
}

/** Stores the bytes once per tenant and digest and names them for the session; answers the artifact. */
async function putArtifact(
  db: DbExecutor,
  scope: ArtifactScope,
  input: { mediaType: string; data: Buffer },
): Promise<{ id: ArtifactId; sha256: string; size: number }> {
  if (input.data.length > maxArtifactBytes) throw new Error(`artifact of ${input.data.length} bytes exceeds ${maxArtifactBytes}`);
  const sha256 = await putBlob(db, scope.tenantId, input.data);
  const id = artifactIdFor(scope.sessionId, sha256, input.mediaType);
  await db
    .insert(artifacts)
    .values({ id, tenantId: scope.tenantId, sessionId: scope.sessionId, sha256, contentType: input.mediaType, size: input.data.length })
    .onConflictDoNothing();
  return { id, sha256, size: input.data.length };
}

const metaColumns = {
  id: artifacts.id,
  sessionId: artifacts.sessionId,
  mediaType: artifacts.contentType,
  size: artifacts.size,
  sha256: artifacts.sha256,
  createdAt: artifacts.createdAt,
};

/** An artifact of this tenant, without its bytes. */
async function findArtifactMeta(db: DbExecutor, tenantId: TenantId, id: ArtifactId): Promise<ArtifactMeta | undefined> {
  const [row] = await db
    .select(metaColumns)
    .from(artifacts)
    .where(and(eq(artifacts.id, id), eq(artifacts.tenantId, tenantId)));
  return row;
}

/** An artifact of this tenant with its bytes, in one query. */
async function findArtifact(db: DbExecutor, tenantId: TenantId, id: ArtifactId): Promise<(ArtifactMeta & { bytes: Buffer }) | undefined> {
  const [row] = await db
    .select({ ...metaColumns, bytes: contentBlobs.bytes })
    .from(artifacts)
    .innerJoin(contentBlobs, and(eq(contentBlobs.tenantId, artifacts.tenantId), eq(contentBlobs.sha256, artifacts.sha256)))
    .where(and(eq(artifacts.id, id), eq(artifacts.tenantId, tenantId)));
  // An artifact's put always leaves the bytes in the blob's row (over a chunked one too).
  return row?.bytes ? { ...row, bytes: row.bytes } : undefined;
}

/** Reads a session's artifacts with their bytes; what the context compiler uses to materialize images (I3). */
export interface ArtifactReader {
  /** The artifacts of these ids that exist in the session, in one query; missing ids are absent from the map. */
  load(ids: readonly ArtifactId[]): Promise<ReadonlyMap<string, { mediaType: string; bytes: Buffer }>>;
}

function artifactReader(db: DbExecutor, scope: ArtifactScope): ArtifactReader {
  return {
    async load(ids) {
      if (ids.length === 0) return new Map();
      const rows = await db
        .select({ id: artifacts.id, mediaType: artifacts.contentType, bytes: contentBlobs.bytes })
        .from(artifacts)
        .innerJoin(contentBlobs, and(eq(contentBlobs.tenantId, artifacts.tenantId), eq(contentBlobs.sha256, artifacts.sha256)))
        .where(
          and(eq(artifacts.tenantId, scope.tenantId), eq(artifacts.sessionId, scope.sessionId), inArray(artifacts.id, [...new Set(ids)])),
        );
      return new Map(rows.flatMap((row) => (row.bytes ? [[row.id, { mediaType: row.mediaType, bytes: row.bytes }] as const] : [])));
    },
  };
}

/** `store.artifacts`. */
export const artifactsRepository = repository({
  db: { putArtifact, findArtifactMeta, findArtifact, artifactReader },
});
