import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NewEvent } from "../../src/core/events.js";
import type { RunId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun } from "./run-fixtures.js";

/** `store.events`: the session's event log, numbered in the statement that appends. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const status = (runId: RunId): NewEvent => ({ runId, step: null, body: { type: "run_status", status: "running" } });

describe("store.events", () => {
  it("D5: appended events get gap-free sequence numbers per session, in order, and read back after any of them", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    const first = await db.store.events.appendEvents(tenantId, sessionId, [status(run.id), status(run.id)]);
    const second = await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    expect([...first, ...second].map((event) => event.seq)).toEqual([1, 2, 3]);
    expect((await db.store.events.readEvents(tenantId, sessionId, 1)).map((event) => event.seq)).toEqual([2, 3]);
    expect((await db.store.events.readEvents(tenantId, sessionId, 0, { upTo: 2 })).map((event) => event.seq)).toEqual([1, 2]);
    expect(await db.store.events.appendEvents(tenantId, sessionId, [])).toEqual([]);
  });

  it("D5: events of a transaction that rolls back leave no row and no gap", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    await expect(
      db.store.transaction(async (tx) => {
        await tx.events.appendEvents(tenantId, sessionId, [status(run.id)]);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    const [event] = await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    expect(event?.seq).toBe(1);
    expect(await db.store.events.readEvents(tenantId, sessionId, 0)).toHaveLength(1);
  });

  it("D8: another tenant reads none of a session's events", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    const other = await db.newSession();
    await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    expect(await db.store.events.readEvents(other.tenantId, sessionId, 0)).toEqual([]);
  });
});
