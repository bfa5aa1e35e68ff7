import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, type ProjectId } from "../../src/ids.js";
import { createStoreDb, type StoreDb, testPlacement } from "../helpers/store-db.js";

/** `store.projectRemoval`: a deleted project's files removed by one worker at a time, under a lease (SPEC F4). */

let db: StoreDb;
/** A claim by worker `owner` of host `hostId` (the test placement's host is not live unless a test makes it so). */
const claim = (owner: string, hostId = "host-a") =>
  db.store.projectRemoval.claimProjectRemoval({ owner, hostId, leaseMs: 30_000, livenessTimeoutMs: 3_000 });
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

describe("store.projectRemoval", () => {
  it("F4: a deleted project's removal is claimed by one worker; the others find nothing while its lease lives", async () => {
    const { tenantId, projectId } = await db.newSession();
    expect(await claim("w-a")).toBeUndefined();
    expect(await db.store.projects.markProjectDeleted(tenantId, projectId)).toBeDefined();
    expect(await claim("w-a")).toMatchObject({ id: projectId, tenantId });
    expect(await claim("w-b")).toBeUndefined();
    expect(await db.store.projectRemoval.renewProjectRemoval(projectId, "w-b", 30_000)).toBe(false);
    expect(await db.store.projectRemoval.finishProjectRemoval(projectId, "w-b")).toBe(false);
    expect(await db.store.projectRemoval.renewProjectRemoval(projectId, "w-a", 30_000)).toBe(true);
    expect(await db.store.projectRemoval.finishProjectRemoval(projectId, "w-a")).toBe(true);
    expect(await db.store.projectRemoval.finishProjectRemoval(projectId, "w-a")).toBe(false);
    expect(await claim("w-b")).toBeUndefined();
  });

  it("F4: a removal released by its worker is resumed by another at once", async () => {
    const { tenantId, projectId } = await db.newSession();
    await db.store.projects.markProjectDeleted(tenantId, projectId);
    expect((await claim("w-a"))?.id).toBe(projectId);
    await db.store.projectRemoval.releaseProjectRemoval(projectId, "w-b");
    expect(await claim("w-b")).toBeUndefined();
    await db.store.projectRemoval.releaseProjectRemoval(projectId, "w-a");
    expect((await claim("w-b"))?.id).toBe(projectId);
  });

  it("W3: while a deleted project is placed on a live host, only that host's workers claim its removal; once the host is dead, any", async () => {
    const { tenantId, projectId } = await db.newSession();
    await db.store.projects.markProjectDeleted(tenantId, projectId);
    await db.store.workers.renewWorker({ id: "w-placed", host: testPlacement.hostId, pid: 1, jobs: {}, commands: 0 });
    expect(await claim("w-b", "host-b")).toBeUndefined();
    expect((await claim("w-placed", testPlacement.hostId))?.id).toBe(projectId);
    await db.store.projectRemoval.releaseProjectRemoval(projectId, "w-placed");
    await db.store.workers.stopWorker("w-placed");
    expect((await claim("w-b", "host-b"))?.id).toBe(projectId);
  });

  it("W3: a host's copies are judged by their projects' state: deleted (or unknown), and where each is placed at which epoch", async () => {
    const kept = await db.newSession();
    const deleted = await db.newSession();
    await db.store.projects.markProjectDeleted(deleted.tenantId, deleted.projectId);
    const unknown = newId("prj") as ProjectId;
    const states = await db.store.projectRemoval.hostCopyStates([kept.projectId, deleted.projectId, unknown]);
    const byId = new Map(states.map((state) => [state.projectId, state]));
    expect(byId.get(kept.projectId)).toEqual({ projectId: kept.projectId, deleted: false, ...testPlacement });
    expect(byId.get(deleted.projectId)).toMatchObject({ deleted: true });
    expect(byId.get(unknown)).toEqual({ projectId: unknown, deleted: true, hostId: null, epoch: 0 });
    expect(await db.store.projectRemoval.hostCopyStates([])).toEqual([]);
  });
});
