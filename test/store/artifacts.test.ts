import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxArtifactBytes } from "../../src/store/artifacts.js";
import { newId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** `store.artifacts`: a session's artifacts (SPEC I1, I2) over content-addressed blobs, every read by tenant (D8). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const png = Buffer.from("89504e470d0a1a0a", "hex");

describe("store.artifacts", () => {
  it("I1, D4: the same bytes stored twice in a session answer the same artifact, with one row and one blob", async () => {
    const scope = await db.newSession();
    const first = await db.store.artifacts.putArtifact(scope, { mediaType: "image/png", data: png });
    const again = await Promise.all([1, 2].map(() => db.store.artifacts.putArtifact(scope, { mediaType: "image/png", data: png })));
    expect(again).toEqual([first, first]);
    expect(await db.query("select 1 from artifacts where session_id = $1", [scope.sessionId])).toHaveLength(1);
    expect(await db.query("select 1 from content_blobs where tenant_id = $1", [scope.tenantId])).toHaveLength(1);
    const other = await db.store.artifacts.putArtifact(scope, { mediaType: "image/x-other", data: png });
    expect(other.id).not.toBe(first.id);
    expect(other.sha256).toBe(first.sha256);
  });

  it("I2: an artifact reads with or without its bytes; an oversized one is refused before any write", async () => {
    const scope = await db.newSession();
    const stored = await db.store.artifacts.putArtifact(scope, { mediaType: "image/png", data: png });
    expect(await db.store.artifacts.findArtifactMeta(scope.tenantId, stored.id)).toMatchObject({
      id: stored.id,
      sessionId: scope.sessionId,
      mediaType: "image/png",
      size: png.length,
      sha256: stored.sha256,
    });
    expect((await db.store.artifacts.findArtifact(scope.tenantId, stored.id))?.bytes).toEqual(png);
    await expect(
      db.store.artifacts.putArtifact(scope, { mediaType: "image/png", data: Buffer.alloc(maxArtifactBytes + 1) }),
    ).rejects.toThrow("exceeds");
    expect(await db.query("select 1 from artifacts where session_id = $1", [scope.sessionId])).toHaveLength(1);
  });

  it("D8: another tenant's id reads no artifact; a reader sees only its own session's artifacts", async () => {
    const mine = await db.newSession();
    const other = await db.newSession();
    const stored = await db.store.artifacts.putArtifact(mine, { mediaType: "image/png", data: png });
    expect(await db.store.artifacts.findArtifactMeta(other.tenantId, stored.id)).toBeUndefined();
    expect(await db.store.artifacts.findArtifact(other.tenantId, stored.id)).toBeUndefined();
    const sibling = await db.store.sessions.insertSession({
      id: newId("ses"),
      tenantId: mine.tenantId,
      projectId: mine.projectId,
      approvalMode: "auto",
      providerProfile: "scripted",
      runMode: "normal",
    });
    if (!sibling) throw new Error("session insert returned nothing");
    const own = db.store.artifacts.artifactReader(mine);
    const loaded = await own.load([stored.id, stored.id, "art_missing"]);
    expect([...loaded.keys()]).toEqual([stored.id]);
    expect(loaded.get(stored.id)).toEqual({ mediaType: "image/png", bytes: png });
    expect((await db.store.artifacts.artifactReader({ tenantId: mine.tenantId, sessionId: sibling.id }).load([stored.id])).size).toBe(0);
    expect((await db.store.artifacts.artifactReader({ tenantId: other.tenantId, sessionId: mine.sessionId }).load([stored.id])).size).toBe(
      0,
    );
    expect((await own.load([])).size).toBe(0);
  });
});
