import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** `store.workers`: liveness records of worker processes (SPEC D9), every time Postgres's own. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const worker = (id: string) => ({ id, host: "host", pid: 1, jobs: { step: 1 }, commands: 0 });

/** A worker that stopped renewing a minute ago: no statement makes that, only time. */
async function silence(id: string): Promise<void> {
  await db.query("update workers set last_seen_at = now() - interval '1 minute' where id = $1", [id]);
}

describe("store.workers", () => {
  it("D9: a worker silent past the timeout is claimed lost by exactly one sweeper, never by itself", async () => {
    await db.store.workers.renewWorker(worker("w-silent"));
    await db.store.workers.renewWorker(worker("w-sweeper"));
    await silence("w-silent");
    expect(await db.store.workers.claimLostWorkers(5000, "w-silent")).toEqual([]);
    const claimed = await db.store.workers.claimLostWorkers(5000, "w-sweeper");
    expect(claimed.map((row) => row.id)).toEqual(["w-silent"]);
    expect(claimed[0]?.silentMs).toBeGreaterThanOrEqual(59_000);
    expect(await db.store.workers.claimLostWorkers(5000, "w-sweeper")).toEqual([]);
    expect(await db.store.workers.endedWorkers(["w-silent", "w-sweeper"])).toEqual(new Set(["w-silent"]));
  });

  it("D9: a worker taken for dead that renews learns it was lost, and is live again", async () => {
    await db.store.workers.renewWorker(worker("w-frozen"));
    await silence("w-frozen");
    await db.store.workers.claimLostWorkers(5000, "w-other");
    expect(await db.store.workers.renewWorker(worker("w-frozen"))).toEqual({ wasLost: true });
    expect(await db.store.workers.renewWorker(worker("w-frozen"))).toEqual({ wasLost: false });
    expect((await db.store.workers.liveWorkers(5000)).map((row) => row.id)).toContain("w-frozen");
  });

  it("D9: a drained worker ends once and leaves the live list; ended rows are pruned after their retention", async () => {
    await db.store.workers.renewWorker(worker("w-drained"));
    await db.store.workers.stopWorker("w-drained");
    await db.store.workers.stopWorker("w-drained");
    expect(await db.query("select stop_reason from workers where id = 'w-drained'")).toEqual([{ stop_reason: "stopped" }]);
    expect((await db.store.workers.liveWorkers(5000)).map((row) => row.id)).not.toContain("w-drained");
    expect(await db.store.workers.pruneEndedWorkers(60_000)).toBe(0);
    expect(await db.store.workers.pruneEndedWorkers(0)).toBeGreaterThanOrEqual(1);
  });
});
