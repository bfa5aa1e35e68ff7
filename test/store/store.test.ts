import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun, runRow } from "./run-fixtures.js";

/** The Store object: its repositories, and `store.transaction` binding the same repositories to one transaction. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

describe("the Store", () => {
  it("D2: every repository of a transaction writes in that transaction: a rollback leaves none of its writes", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    await expect(
      db.store.transaction(async (tx) => {
        expect(await tx.runs.finishRun(run, "cancelled", {})).not.toBeNull();
        await tx.messages.insertMessage(
          { tenantId, sessionId, runId: run.id },
          { runOrdinal: run.ordinal, stepIndex: -1, part: 0, callIndex: 0 },
          { role: "user", text: "x" },
        );
        await tx.events.appendEvents(tenantId, sessionId, [{ runId: run.id, step: null, body: { type: "run_end", status: "cancelled" } }]);
        // The transaction sees its own writes through any repository.
        expect((await tx.runs.readRun(run.id))?.status).toBe("cancelled");
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect((await runRow(db, run.id)).status).toBe("queued");
    expect(await db.query("select 1 from messages where run_id = $1", [run.id])).toEqual([]);
    expect(await db.query("select 1 from events where run_id = $1", [run.id])).toEqual([]);
  });

  it("D2: a committed transaction's writes are seen by the store outside it", async () => {
    const { run } = await placedRun(db);
    await db.store.transaction((tx) => tx.runs.finishRun(run, "cancelled", {}));
    expect((await runRow(db, run.id)).status).toBe("cancelled");
  });
});
