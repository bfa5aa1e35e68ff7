import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun } from "./run-fixtures.js";

/** `store.messages`: canonical history, written idempotently by position and read in its order. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

describe("store.messages", () => {
  it("D4: a message written twice at one position is stored once: the first stands", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    const owner = { tenantId, sessionId, runId: run.id };
    const at = { runOrdinal: run.ordinal, stepIndex: -1, part: 0 as const, callIndex: 0 };
    await db.store.messages.insertMessage(owner, at, { role: "user", text: "first" });
    await db.store.messages.insertMessage(owner, at, { role: "user", text: "second" });
    expect(await db.store.messages.loadHistory(tenantId, sessionId, run.ordinal)).toEqual([
      { message: { role: "user", text: "first" }, position: at },
    ]);
  });

  it("D1: history reads in position order, only what follows a given position, up to the run asked for, of the tenant's session", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    const owner = { tenantId, sessionId, runId: run.id };
    const user = { runOrdinal: run.ordinal, stepIndex: -1, part: 0 as const, callIndex: 0 };
    const assistant = { runOrdinal: run.ordinal, stepIndex: 0, part: 1 as const, callIndex: 0 };
    await db.store.messages.insertMessage(owner, assistant, { role: "assistant", text: "hi", toolCalls: [] });
    await db.store.messages.insertMessage(owner, user, { role: "user", text: "hello" });
    const positions = async (after?: typeof user) =>
      (await db.store.messages.loadHistory(tenantId, sessionId, run.ordinal, after)).map((entry) => entry.position);
    expect(await positions()).toEqual([user, assistant]);
    expect(await positions(user)).toEqual([assistant]);
    expect(await db.store.messages.loadHistory(tenantId, sessionId, run.ordinal - 1)).toEqual([]);
    expect(await db.store.messages.loadHistory((await db.newSession()).tenantId, sessionId, run.ordinal)).toEqual([]);
  });
});
