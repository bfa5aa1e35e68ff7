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

describe("store.tenantAdmission.newRunReads", () => {
  it("X5, S1: accepting a turn reads the session, the tenant's settings and its waiting runs in one statement; another tenant's session, a deleted one or one of a deleted project reads as none", async () => {
    const placed = await placedRun(db);
    const other = await db.newSession();
    const reads = await db.store.tenantAdmission.newRunReads(placed.tenantId, placed.sessionId);
    expect(reads.session).toEqual({ activeRunId: placed.run.id, approvalMode: expect.any(String) });
    expect(reads.tenant).toMatchObject({ fullAccess: false, quotas: {}, toolLimits: {} });
    expect(reads.waitingRuns).toBe(0);
    await db.store.transaction((tx) => tx.runs.insertRun({ tenantId: placed.tenantId, sessionId: placed.sessionId, input: "waits" }));
    expect((await db.store.tenantAdmission.newRunReads(placed.tenantId, placed.sessionId)).waitingRuns).toBe(1);
    // Another tenant's session is not found, whoever asks; a tenant that does not exist has no settings.
    expect((await db.store.tenantAdmission.newRunReads(placed.tenantId, other.sessionId)).session).toBeUndefined();
    const nobody = await db.store.tenantAdmission.newRunReads("ten_nobody" as typeof placed.tenantId, placed.sessionId);
    expect([nobody.session, nobody.tenant, nobody.waitingRuns]).toEqual([undefined, undefined, 0]);
    await db.query("update projects set deleted_at = now() where id = $1", [other.projectId]);
    expect((await db.store.tenantAdmission.newRunReads(other.tenantId, other.sessionId)).session).toBeUndefined();
    await db.query("update sessions set deleted_at = now() where id = $1", [placed.sessionId]);
    expect((await db.store.tenantAdmission.newRunReads(placed.tenantId, placed.sessionId)).session).toBeUndefined();
  });
});
