import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, type ApprovalId } from "../../src/ids.js";
import type { CallRow } from "../../src/store/runs.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { claimedBatch, type Batch } from "./run-fixtures.js";

/** `store.approvals`: approvals asked, decided, expired and closed (SPEC X3, S4). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

async function ask(batch: Batch, call: CallRow, expiresInMs = 60_000): Promise<ApprovalId> {
  const id = newId("apr");
  const asked = await db.store.transaction((tx) =>
    tx.toolCalls.askApproval(call.id, {
      id,
      tenantId: batch.tenantId,
      sessionId: batch.sessionId,
      runId: batch.run.id,
      expiresAt: new Date(Date.now() + expiresInMs),
    }),
  );
  if (!asked) throw new Error("approval not asked");
  return id;
}

describe("store.approvals", () => {
  it("X3: closing the approvals of calls that will not run closes only the pending ones, once, with their events", async () => {
    const batch = await claimedBatch(db, ["write", "write"]);
    const [first, second] = batch.calls as [CallRow, CallRow];
    const pending = await ask(batch, first);
    const decided = await ask(batch, second);
    await db.store.approvals.recordApprovalDecision(decided, {
      status: "approved",
      reason: null,
      decidedByKeyId: null,
      editedArguments: null,
    });
    const close = () => db.store.approvals.closePendingApprovals(batch.held, [first.id, second.id], "the run was cancelled");
    const events = await close();
    expect(events.map((event) => event.data)).toEqual([
      {
        type: "approval_resolved",
        approvalId: pending,
        callId: "call-0",
        status: "cancelled",
        edited: false,
        reason: "the run was cancelled",
      },
    ]);
    expect(await close()).toEqual([]);
    const rows = await db.query<{ id: string; status: string }>("select id, status from approvals where run_id = $1", [batch.run.id]);
    expect(new Map(rows.map((row) => [row.id, row.status]))).toEqual(
      new Map([
        [pending, "cancelled"],
        [decided, "approved"],
      ]),
    );
  });

  it("X3, S4: a decision records who, when, why and any edited arguments; only pending approvals past their expiry are due", async () => {
    const batch = await claimedBatch(db, ["write", "write"]);
    const [first, second] = batch.calls as [CallRow, CallRow];
    const expired = await ask(batch, first, -1000);
    const live = await ask(batch, second);
    const due = (await db.store.approvals.dueApprovals(1000)).map((row) => row.id);
    expect(due).toContain(expired);
    expect(due).not.toContain(live);
    const decided = await db.store.approvals.recordApprovalDecision(live, {
      status: "approved",
      reason: "fine",
      decidedByKeyId: null,
      editedArguments: '{"path":"b"}',
    });
    expect(decided).toMatchObject({ status: "approved", reason: "fine", editedArguments: '{"path":"b"}' });
    expect(decided?.decidedAt).toBeInstanceOf(Date);
  });

  it("D8: another tenant's approval is not found", async () => {
    const batch = await claimedBatch(db, ["write"]);
    const id = await ask(batch, batch.calls[0] as CallRow);
    const other = await db.newSession();
    expect(await db.store.approvals.approvalRunOfTenant(other.tenantId, id)).toBeUndefined();
    expect(await db.store.approvals.approvalRunOfTenant(batch.tenantId, id)).toEqual({ runId: batch.run.id });
    expect(await db.store.approvals.approvalWithCallOfTenant(other.tenantId, id)).toBeUndefined();
  });
});
