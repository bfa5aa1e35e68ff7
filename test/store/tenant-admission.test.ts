import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallRow } from "../../src/store/runs.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { claimedBatch, claimedStep, placedRun } from "./run-fixtures.js";

/** `store.tenantAdmission` and `store.toolCallSlots`: what a tenant's quotas count (SPEC X5). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

describe("store.tenantAdmission", () => {
  it("X5: a tenant's working runs take its active-run slots; a run holding its session's slot waits for one, oldest first", async () => {
    const placed = await placedRun(db);
    await claimedStep(db, placed);
    expect(await db.store.transaction((tx) => tx.tenantAdmission.freeRunSlots(placed.tenantId, 1))).toBe(0);
    expect(await db.store.transaction((tx) => tx.tenantAdmission.freeRunSlots(placed.tenantId, 3))).toBe(2);
    expect((await db.store.sessions.sessionOfTenant(placed.tenantId, placed.sessionId))?.activeRunId).toBe(placed.run.id);
    // A second session of the same tenant, whose run waits for a slot.
    const second = await db.store.sessions.insertSession({
      id: `ses_second_${placed.run.id}`,
      tenantId: placed.tenantId,
      projectId: placed.projectId,
      approvalMode: "auto",
      providerProfile: "scripted",
      runMode: "normal",
    });
    if (!second) throw new Error("no session");
    const waiting = await db.store.runs.insertRun({ tenantId: placed.tenantId, sessionId: second.id, input: "wait" });
    await db.store.transaction((tx) => tx.tenantAdmission.holdSessionSlot(waiting));
    expect(await db.store.transaction((tx) => tx.tenantAdmission.countWaitingRuns(placed.tenantId))).toBe(1);
    const admitted = await db.store.transaction((tx) => tx.tenantAdmission.runsWaitingForSlot(placed.tenantId, 5));
    expect(admitted.map((run) => run.id)).toEqual([waiting.id]);
    expect(await db.store.transaction((tx) => tx.tenantAdmission.runsWaitingForSlot(placed.tenantId, 0))).toEqual([]);
  });

  it("X5: a tenant's call slots are its running calls: those over its quota wait", async () => {
    const batch = await claimedBatch(db, ["probe", "probe"]);
    const [first] = batch.calls as [CallRow];
    await db.store.toolCalls.markCallsRunning(batch.held, [first], "w/j", { index: 0, attempt: 1 });
    expect(await db.store.toolCallSlots.runningCallsOf(batch.tenantId)).toBe(1);
    expect(await db.store.transaction((tx) => tx.toolCallSlots.takeCallSlots(batch.tenantId, 2, 5))).toBe(1);
    expect(await db.store.transaction((tx) => tx.toolCallSlots.takeCallSlots(batch.tenantId, 1, 5))).toBe(0);
  });
});
