import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallOutcome } from "../../src/core/call-outcome.js";
import { newId } from "../../src/ids.js";
import type { CallRow } from "../../src/store/runs.js";
import type { Answered } from "../../src/store/tool-calls.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { claimedBatch, runRow, type Batch } from "./run-fixtures.js";

/** `store.toolCalls`: a call's start, answer (and the run's hand-off with it), approval and child, each guarded, on Postgres. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const stepRef = { index: 0, attempt: 1 };
const succeeded: CallOutcome = { status: "succeeded", isError: false, content: [{ type: "text", text: "done" }] };
const next = { kind: "step" as const, stepIndex: 1 };

function answer(batch: Batch, call: CallRow, options: { outcome?: CallOutcome; execFence?: number; handOffFence?: number } = {}) {
  return db.store.toolCalls.answerCall({
    run: batch.held,
    call,
    outcome: options.outcome ?? succeeded,
    step: stepRef,
    ...(options.execFence !== undefined ? { execFence: options.execFence } : {}),
    ...(options.handOffFence !== undefined ? { handOff: { fence: options.handOffFence, current: batch.held.nextJob, next } } : {}),
  });
}

const lastSeq = async (sessionId: string): Promise<number> =>
  (await db.query<{ seq: number }>("select event_seq::int as seq from sessions where id = $1", [sessionId]))[0]?.seq ?? 0;

const statuses = async (batch: Batch) =>
  (await db.query<{ status: string }>("select status from tool_calls where run_id = $1 order by call_index", [batch.run.id])).map(
    (row) => row.status,
  );

describe("store.toolCalls", () => {
  it("D4: calls are marked running all or none: one no longer queued keeps every other queued", async () => {
    const batch = await claimedBatch(db, ["probe", "probe"]);
    const [first, second] = batch.calls as [CallRow, CallRow];
    expect((await answer(batch, second, { outcome: { ...succeeded, status: "denied", isError: true } })).answered).toBe(true);
    expect(await db.store.toolCalls.markCallsRunning(batch.held, [first, second], "w/j", stepRef)).toBeNull();
    expect(await statuses(batch)).toEqual(["queued", "denied"]);
  });

  it("D4: a mark under a stale fence is refused; the holder's marks each call running under its fence with its event", async () => {
    const batch = await claimedBatch(db, ["probe", "probe"]);
    expect(
      await db.store.toolCalls.markCallsRunning({ ...batch.held, fence: batch.held.fence - 1 }, batch.calls, "w/j", stepRef),
    ).toBeNull();
    expect(await statuses(batch)).toEqual(["queued", "queued"]);
    const events = await db.store.toolCalls.markCallsRunning(batch.held, batch.calls, "w/j", stepRef);
    expect(events?.map((event) => event.data)).toEqual([
      { type: "tool_update", callId: "call-0", status: "running" },
      { type: "tool_update", callId: "call-1", status: "running" },
    ]);
    expect(await db.query("select exec_fence::int as fence, executed_by from tool_calls where run_id = $1", [batch.run.id])).toEqual([
      { fence: batch.held.fence, executed_by: "w/j" },
      { fence: batch.held.fence, executed_by: "w/j" },
    ]);
  });

  it("D3, L2: a call is answered once: its tool message and its tool_end are written once, a second answer is refused", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    const [call] = batch.calls as [CallRow];
    await db.store.toolCalls.markCallsRunning(batch.held, [call], "w/j", stepRef);
    const first = await answer(batch, call);
    expect(first.answered).toBe(true);
    expect(first.events.map((event) => event.type)).toEqual(["tool_end"]);
    const again = await answer(batch, call, { outcome: { ...succeeded, status: "failed", isError: true } });
    expect(again).toEqual({ answered: false, handedOff: false, events: [] });
    expect(await statuses(batch)).toEqual(["succeeded"]);
    expect(await db.query("select role from messages where run_id = $1 and part = 2", [batch.run.id])).toEqual([{ role: "tool" }]);
    expect(await db.query("select 1 from events where run_id = $1 and type = 'tool_end'", [batch.run.id])).toHaveLength(1);
  });

  it("D2: a call is answered only from a status that leads to the answer's: one that never started cannot have succeeded", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    const [call] = batch.calls as [CallRow];
    expect((await answer(batch, call)).answered).toBe(false);
    expect(await statuses(batch)).toEqual(["queued"]);
    expect((await answer(batch, call, { outcome: { ...succeeded, status: "skipped", isError: true } })).answered).toBe(true);
    expect(await statuses(batch)).toEqual(["skipped"]);
  });

  it("D4: only the batch attempt that marked a call running may answer it", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    const [call] = batch.calls as [CallRow];
    await db.store.toolCalls.markCallsRunning(batch.held, [call], "w/j", stepRef);
    expect((await answer(batch, call, { execFence: batch.held.fence - 1 })).answered).toBe(false);
    expect(await statuses(batch)).toEqual(["running"]);
    expect((await answer(batch, call, { execFence: batch.held.fence })).answered).toBe(true);
  });

  it("D1, D4: an answer hands the run to its next step only when no sibling call of the batch is still open", async () => {
    const batch = await claimedBatch(db, ["probe", "probe"]);
    const [first, second] = batch.calls as [CallRow, CallRow];
    await db.store.toolCalls.markCallsRunning(batch.held, batch.calls, "w/j", stepRef);
    const one = await answer(batch, first, { execFence: batch.held.fence, handOffFence: batch.held.fence });
    expect(one).toMatchObject({ answered: true, handedOff: false });
    expect((await runRow(db, batch.run.id)).nextJob).toEqual({ kind: "batch", stepIndex: 0 });
    const two = await answer(batch, second, { execFence: batch.held.fence, handOffFence: batch.held.fence });
    expect(two).toMatchObject({ answered: true, handedOff: true });
    expect(await runRow(db, batch.run.id)).toMatchObject({ stepIndex: 1, nextJob: next, leaseOwner: null });
  });

  it("D4: an answer whose hand-off names a stale run fence answers the call but leaves the run where it is", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    const [call] = batch.calls as [CallRow];
    await db.store.toolCalls.markCallsRunning(batch.held, [call], "w/j", stepRef);
    const answered = await answer(batch, call, { handOffFence: batch.held.fence - 1 });
    expect(answered).toMatchObject({ answered: true, handedOff: false });
    expect((await runRow(db, batch.run.id)).nextJob).toEqual({ kind: "batch", stepIndex: 0 });
  });

  it("F1, L2: an answer records the call's file changes with it", async () => {
    const batch = await claimedBatch(db, ["write"]);
    const [call] = batch.calls as [CallRow];
    const change = {
      id: newId("fch"),
      path: "a.txt",
      existedBefore: false,
      modeBefore: null,
      modeAfter: 0o644,
      sha256Before: null,
      sha256After: "ab".repeat(32),
      diff: "+a",
    };
    await db.store.toolCalls.markCallsRunning(batch.held, [call], "w/j", stepRef);
    await answer(batch, call, { outcome: { ...succeeded, fileChanges: [change] } });
    expect(await db.query("select path, tool_call_id from file_changes where run_id = $1", [batch.run.id])).toEqual([
      { path: "a.txt", tool_call_id: call.id },
    ]);
  });

  it("D4: a call's progress lands only while it runs under the attempt's fence", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    const [call] = batch.calls as [CallRow];
    expect(await db.store.toolCalls.appendCallProgress(batch.held, call, stepRef, "before")).toEqual([]);
    await db.store.toolCalls.markCallsRunning(batch.held, [call], "w/j", stepRef);
    expect(await db.store.toolCalls.appendCallProgress({ ...batch.held, fence: batch.held.fence - 1 }, call, stepRef, "stale")).toEqual([]);
    expect(await db.store.toolCalls.appendCallProgress(batch.held, call, stepRef, "half")).toHaveLength(1);
    await answer(batch, call);
    expect(await db.store.toolCalls.appendCallProgress(batch.held, call, stepRef, "after")).toEqual([]);
  });

  it("X3: a call asks for approval only while queued, with its approval row; a decision puts it back to queued once", async () => {
    const batch = await claimedBatch(db, ["write"]);
    const [call] = batch.calls as [CallRow];
    const approval = () => ({
      id: newId("apr"),
      tenantId: batch.tenantId,
      sessionId: batch.sessionId,
      runId: batch.run.id,
      expiresAt: new Date(Date.now() + 60_000),
    });
    expect(await db.store.transaction((tx) => tx.toolCalls.askApproval(call.id, approval()))).toBe(true);
    expect(await db.store.transaction((tx) => tx.toolCalls.askApproval(call.id, approval()))).toBe(false);
    expect(await db.query("select status from approvals where tool_call_id = $1", [call.id])).toEqual([{ status: "pending" }]);
    expect((await db.store.toolCalls.approveCall(call.id))?.status).toBe("queued");
    expect(await db.store.toolCalls.approveCall(call.id)).toBeUndefined();
  });

  it("A1: a child run is linked to its call once, only while the call runs under the batch's fence", async () => {
    const parent = await claimedBatch(db, ["agent"]);
    const [call] = parent.calls as [CallRow];
    const child = await db.store.runs.insertRun({ tenantId: parent.tenantId, sessionId: parent.sessionId, input: "sub" });
    expect(await db.store.toolCalls.linkChildRun(call.id, parent.held.fence, child.id)).toBe(false);
    await db.store.toolCalls.markCallsRunning(parent.held, [call], "w/j", stepRef);
    expect(await db.store.toolCalls.linkChildRun(call.id, parent.held.fence - 1, child.id)).toBe(false);
    expect(await db.store.toolCalls.linkChildRun(call.id, parent.held.fence, child.id)).toBe(true);
    expect(await db.store.toolCalls.linkChildRun(call.id, parent.held.fence, child.id)).toBe(false);
    expect((await db.store.toolCalls.callWaitingForChild(child.id))?.id).toBe(call.id);
  });

  it("D4, D5: answers of many sessions in one statement: a stale fence refuses only its own row, and each session's events stay gap-free", async () => {
    const batches = await Promise.all([0, 1, 2, 3].map(() => claimedBatch(db, ["probe"])));
    for (const batch of batches) await db.store.toolCalls.markCallsRunning(batch.held, batch.calls, "w/j", stepRef);
    const before = await Promise.all(batches.map((batch) => lastSeq(batch.sessionId)));
    const request = (batch: Batch, fences: { exec: number; handOff: number }) => ({
      run: batch.held,
      call: batch.calls[0] as CallRow,
      outcome: succeeded,
      step: stepRef,
      execFence: fences.exec,
      handOff: { fence: fences.handOff, current: batch.held.nextJob, next },
    });
    const [a, b, c, d] = batches as [Batch, Batch, Batch, Batch];
    const fresh = (batch: Batch) => ({ exec: batch.held.fence, handOff: batch.held.fence });
    const answered = await db.store.toolCalls.answerCalls([
      request(a, fresh(a)),
      // The run's fence moved on: the call is answered, the run stays where it is.
      request(b, { exec: b.held.fence, handOff: b.held.fence - 1 }),
      // Another attempt ran the call: refused, nothing of it written.
      request(c, { exec: c.held.fence - 1, handOff: c.held.fence }),
      request(d, fresh(d)),
    ]);
    expect(answered.map((one) => [one.answered, one.handedOff])).toEqual([
      [true, true],
      [true, false],
      [false, false],
      [true, true],
    ]);
    expect(await Promise.all(batches.map(statuses))).toEqual([["succeeded"], ["succeeded"], ["running"], ["succeeded"]]);
    expect((await runRow(db, c.run.id)).nextJob).toEqual({ kind: "batch", stepIndex: 0 });
    expect((await runRow(db, b.run.id)).nextJob).toEqual({ kind: "batch", stepIndex: 0 });
    expect((await runRow(db, a.run.id)).nextJob).toEqual(next);
    for (const [index, batch] of batches.entries()) {
      const stored = await db.query<{ seq: number; type: string }>(
        "select seq::int, type from events where session_id = $1 and seq > $2 order by seq",
        [batch.sessionId, before[index]],
      );
      const returned = (answered[index]?.events ?? []).map((event) => ({ seq: event.seq, type: event.type }));
      expect(stored).toEqual(returned);
      expect(stored.map((event) => event.seq)).toEqual(index === 2 ? [] : [(before[index] as number) + 1]);
      const tools = await db.query("select 1 from messages where run_id = $1 and role = 'tool'", [batch.run.id]);
      expect(tools).toHaveLength(index === 2 ? 0 : 1);
    }
    await expect(db.store.toolCalls.answerCalls([request(a, fresh(a)), request(a, fresh(a))])).rejects.toThrow(/one call per session/);
  });

  it("D1, D5: answers that arrive together are each stored once; two calls of one run are answered one after the other, and the last hands the run on", async () => {
    const pairs = await Promise.all([0, 1, 2].map(() => claimedBatch(db, ["probe", "probe"])));
    for (const batch of pairs) await db.store.toolCalls.markCallsRunning(batch.held, batch.calls, "w/j", stepRef);
    const before = await Promise.all(pairs.map((batch) => lastSeq(batch.sessionId)));
    const results = await Promise.all(
      pairs.flatMap((batch) =>
        batch.calls.map((call) => answer(batch, call, { execFence: batch.held.fence, handOffFence: batch.held.fence })),
      ),
    );
    expect(results.every((result) => result.answered)).toBe(true);
    for (const [index, batch] of pairs.entries()) {
      const [first, second] = results.slice(2 * index, 2 * index + 2) as [Answered, Answered];
      // Exactly one of the two closed the batch and handed the run on.
      expect([first.handedOff, second.handedOff].filter(Boolean)).toHaveLength(1);
      expect(await runRow(db, batch.run.id)).toMatchObject({ stepIndex: 1, nextJob: next });
      const seqs = [...first.events, ...second.events].map((event) => event.seq).sort((x, y) => x - y);
      expect(seqs).toEqual([(before[index] as number) + 1, (before[index] as number) + 2]);
    }
  });
});
