import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** `store.projectRemoval`: a deleted project's files removed by one worker at a time, under a lease (SPEC F4). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

describe("store.projectRemoval", () => {
  it("F4: a deleted project's removal is claimed by one worker; the others find nothing while its lease lives", async () => {
    const { tenantId, projectId } = await db.newSession();
    expect(await db.store.projectRemoval.claimProjectRemoval("w-a", 30_000)).toBeUndefined();
    expect(await db.store.projects.markProjectDeleted(tenantId, projectId)).toBeDefined();
    expect(await db.store.projectRemoval.claimProjectRemoval("w-a", 30_000)).toMatchObject({ id: projectId, tenantId });
    expect(await db.store.projectRemoval.claimProjectRemoval("w-b", 30_000)).toBeUndefined();
    expect(await db.store.projectRemoval.renewProjectRemoval(projectId, "w-b", 30_000)).toBe(false);
    expect(await db.store.projectRemoval.finishProjectRemoval(projectId, "w-b")).toBe(false);
    expect(await db.store.projectRemoval.renewProjectRemoval(projectId, "w-a", 30_000)).toBe(true);
    expect(await db.store.projectRemoval.finishProjectRemoval(projectId, "w-a")).toBe(true);
    expect(await db.store.projectRemoval.finishProjectRemoval(projectId, "w-a")).toBe(false);
    expect(await db.store.projectRemoval.claimProjectRemoval("w-b", 30_000)).toBeUndefined();
  });

  it("F4: a removal released by its worker is resumed by another at once", async () => {
    const { tenantId, projectId } = await db.newSession();
    await db.store.projects.markProjectDeleted(tenantId, projectId);
    expect((await db.store.projectRemoval.claimProjectRemoval("w-a", 30_000))?.id).toBe(projectId);
    await db.store.projectRemoval.releaseProjectRemoval(projectId, "w-b");
    expect(await db.store.projectRemoval.claimProjectRemoval("w-b", 30_000)).toBeUndefined();
    await db.store.projectRemoval.releaseProjectRemoval(projectId, "w-a");
    expect((await db.store.projectRemoval.claimProjectRemoval("w-b", 30_000))?.id).toBe(projectId);
  });
});
