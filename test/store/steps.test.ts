import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { historyOrigin } from "../../src/store/runs.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { claimedStep, leaseMs, placedRun, runRow, stepJob } from "./run-fixtures.js";

/** `store.steps`: a model step's start, streamed events, commit and ends, each guarded by the step job's fence. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const step = { index: 0, attempt: 1, tools: ["probe"] };
const answer = (calls: string[]) => ({
  text: "working",
  toolCalls: calls.map((name, index) => ({ callId: `call-${index}`, name, argumentsRaw: "{}" })),
  finish: { reason: "tool_calls" as const, stopReason: "tool_use", usage: { inputTokens: 3, outputTokens: 5 } },
  pendingEvents: [],
});

describe("store.steps", () => {
  it("D4: a step's start with a stale fence writes nothing; the holder's writes the step streaming and its events", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    const body = { type: "step_start" as const, stepIndex: 0, attempt: 1, tools: ["probe"] };
    expect(await db.store.steps.startStep({ ...held, fence: held.fence - 1 }, step, [body])).toBeNull();
    expect(await db.query("select 1 from steps where run_id = $1", [placed.run.id])).toEqual([]);
    const events = await db.store.steps.startStep(held, step, [body]);
    expect(events?.map((event) => event.type)).toEqual(["step_start"]);
    expect(await db.query("select status, attempt from steps where run_id = $1", [placed.run.id])).toEqual([
      { status: "streaming", attempt: 1 },
    ]);
  });

  it("D4, X1: events streamed under a stale fence are refused; the holder's are appended in order", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    const delta = { type: "text_delta" as const, text: "hi" };
    expect(await db.store.steps.appendStepEvents({ ...held, fence: held.fence - 1 }, { index: 0, attempt: 1 }, [delta])).toBeNull();
    const events = await db.store.steps.appendStepEvents(held, { index: 0, attempt: 1 }, [delta, delta]);
    expect(events?.map((event) => event.seq)).toEqual([1, 2]);
    expect(events?.every((event) => event.step?.attempt === 1)).toBe(true);
  });

  it("D4: a commit with a stale fence is refused and writes no step, message, call or event", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    expect(await db.store.steps.commitStep({ ...held, fence: held.fence - 1 }, step, answer(["probe"]))).toBeNull();
    for (const table of ["steps", "messages", "tool_calls", "events"]) {
      expect(await db.query(`select 1 from ${table} where run_id = $1`, [placed.run.id]), table).toEqual([]);
    }
    expect((await runRow(db, placed.run.id)).nextJob).toEqual(stepJob);
  });

  it("D4, D5: a commit sent again after its answer was lost is refused and appends nothing twice", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    expect(await db.store.steps.commitStep(held, step, answer(["probe"]))).not.toBeNull();
    // The same attempt's commit again (a retry after a lost answer): the run is on its batch now.
    expect(await db.store.steps.commitStep(held, step, answer(["probe"]))).toBeNull();
    const ends = await db.query("select 1 from events where run_id = $1 and type = 'step_end'", [placed.run.id]);
    expect(ends).toHaveLength(1);
    expect(await db.query("select 1 from tool_calls where run_id = $1", [placed.run.id])).toHaveLength(1);
  });

  it("W3: a commit that hands the run to a batch answers the project's placement as it read it, so the batch is dispatched without another statement", async () => {
    const placed = await placedRun(db);
    await db.store.workers.renewWorker({ id: `w-${placed.projectId}`, host: "host-commit", pid: 1, jobs: {}, commands: 0 });
    const placement = await db.store.placements.placeProject({ projectId: placed.projectId }, 5000);
    expect(placement).toMatchObject({ hostId: "host-commit" });
    const committed = await db.store.steps.commitStep(await claimedStep(db, placed), step, answer(["probe"]));
    expect(committed?.placement).toEqual({ hostId: "host-commit", epoch: placement?.epoch });
    // Released (its host found dead): the commit names no host, and the dispatcher places the project again.
    await db.query("update workers set last_seen_at = now() - interval '1 minute' where host = 'host-commit'");
    expect(await db.store.placements.releaseHostPlacements("host-commit", 5000)).toHaveLength(1);
    const again = await placedRun(db);
    await db.query("update sessions set project_id = $1 where id = $2", [placed.projectId, again.sessionId]);
    const next = await db.store.steps.commitStep(await claimedStep(db, again), step, answer(["probe"]));
    expect(next?.placement).toBeNull();
  });

  it("D1, L2: a commit ends the step, writes the assistant message and its calls queued, and hands the run to its batch", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    const committed = await db.store.steps.commitStep(held, step, answer(["probe", "read"]));
    expect(committed?.events.map((event) => event.type)).toEqual(["step_end"]);
    expect(await db.query("select status, finish_reason, stop_reason from steps where run_id = $1", [placed.run.id])).toEqual([
      { status: "completed", finish_reason: "tool_calls", stop_reason: "tool_use" },
    ]);
    expect(await db.query("select role from messages where run_id = $1", [placed.run.id])).toEqual([{ role: "assistant" }]);
    expect(await db.query("select name, status from tool_calls where run_id = $1 order by call_index", [placed.run.id])).toEqual([
      { name: "probe", status: "queued" },
      { name: "read", status: "queued" },
    ]);
    expect(await runRow(db, placed.run.id)).toMatchObject({
      nextJob: { kind: "batch", stepIndex: 0 },
      leaseOwner: null,
      status: "running",
    });
  });

  it("D4, D5: step commits of many sessions in one statement: a stale fence refuses only its own row, and each session's events stay gap-free", async () => {
    const placed = await Promise.all([0, 1, 2, 3].map(() => placedRun(db)));
    const held = await Promise.all(placed.map((one) => claimedStep(db, one)));
    const lastSeq = async (sessionId: string) =>
      (await db.query<{ seq: number }>("select coalesce(max(seq), 0)::int as seq from events where session_id = $1", [sessionId]))[0]
        ?.seq as number;
    const before = await Promise.all(placed.map((one) => lastSeq(one.sessionId)));
    const [a, b, c, d] = held as [(typeof held)[0], (typeof held)[0], (typeof held)[0], (typeof held)[0]];
    const committed = await db.store.steps.commitSteps([
      { held: a, step, result: answer(["probe", "read"]) },
      // Another attempt holds the run now: refused, nothing of it written.
      { held: { ...b, fence: b.fence - 1 }, step, result: answer(["probe"]) },
      // No calls: committed with no next job (the caller ends the run).
      { held: c, step, result: answer([]) },
      { held: d, step, result: answer(["probe"]) },
    ]);
    expect(committed.map((one) => one !== null)).toEqual([true, false, true, true]);
    const calls = await Promise.all(
      placed.map((one) => db.query<{ name: string }>("select name from tool_calls where run_id = $1 order by call_index", [one.run.id])),
    );
    expect(calls.map((rows) => rows.map((row) => row.name))).toEqual([["probe", "read"], [], [], ["probe"]]);
    expect((await Promise.all(placed.map((one) => runRow(db, one.run.id)))).map((row) => row.nextJob)).toEqual([
      { kind: "batch", stepIndex: 0 },
      stepJob,
      null,
      { kind: "batch", stepIndex: 0 },
    ]);
    for (const [index, one] of placed.entries()) {
      const stored = await db.query<{ seq: number; type: string }>(
        "select seq::int, type from events where session_id = $1 and seq > $2 order by seq",
        [one.sessionId, before[index]],
      );
      const returned = (committed[index]?.events ?? []).map((event) => ({ seq: event.seq, type: event.type }));
      expect(stored).toEqual(returned);
      expect(stored.map((event) => event.seq)).toEqual(index === 1 ? [] : [(before[index] as number) + 1]);
      const rows = await Promise.all(
        ["steps", "messages"].map((table) => db.query(`select 1 from ${table} where run_id = $1`, [one.run.id])),
      );
      expect(rows.map((found) => found.length)).toEqual(index === 1 ? [0, 0] : [1, 1]);
    }
    await expect(
      db.store.steps.commitSteps([
        { held: a, step, result: answer([]) },
        { held: a, step, result: answer([]) },
      ]),
    ).rejects.toThrow(/one step per session/);
  });

  it("D1, D4: commits that arrive together each commit once, through one batcher", async () => {
    const placed = await Promise.all([0, 1, 2, 3, 4].map(() => placedRun(db)));
    const held = await Promise.all(placed.map((one) => claimedStep(db, one)));
    const committed = await Promise.all(held.map((one) => db.store.steps.commitStep(one, step, answer(["probe"]))));
    expect(committed.every((one) => one?.events.map((event) => event.type).join() === "step_end")).toBe(true);
    for (const one of placed) {
      expect(await db.query("select status from tool_calls where run_id = $1", [one.run.id])).toEqual([{ status: "queued" }]);
      expect(await db.query("select 1 from messages where run_id = $1", [one.run.id])).toHaveLength(1);
    }
  });

  it("D1: a step with no calls commits with no next job; the caller ends the run", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    expect(await db.store.steps.commitStep(held, step, answer([]))).not.toBeNull();
    expect((await runRow(db, placed.run.id)).nextJob).toBeNull();
  });

  it("D1: an attempt that commits no answer is recorded, so the next claim counts one attempt more", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    await db.store.steps.endStepAttempt(held, step, { status: "completed", finishReason: "empty_asked_again" });
    expect(await db.query("select status, finish_reason, attempt from steps where run_id = $1", [placed.run.id])).toEqual([
      { status: "completed", finish_reason: "empty_asked_again", attempt: 1 },
    ]);
    await db.store.runs.releaseForRetry(held);
    const again = await db.store.runs.claimStep({
      runId: placed.run.id,
      stepIndex: 0,
      next: stepJob,
      owner: "w/2",
      leaseMs,
      historyAfter: historyOrigin,
    });
    if (again.kind !== "claimed") throw new Error(again.kind);
    expect(again.extra.attempt).toBe(2);
    await db.store.steps.endStepAttempt(again.run, { ...step, attempt: 2 }, { status: "failed" });
    expect(await db.query("select status, finish_reason, attempt from steps where run_id = $1", [placed.run.id])).toEqual([
      { status: "failed", finish_reason: null, attempt: 2 },
    ]);
  });

  it("X2: closing a streaming step answers the text it streamed; a step no longer streaming is left alone", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    await db.store.steps.startStep(held, step, [{ type: "step_start", stepIndex: 0, attempt: 1, tools: ["probe"] }]);
    await db.store.steps.appendStepEvents(held, { index: 0, attempt: 1 }, [
      { type: "text_delta", text: "par" },
      { type: "text_delta", text: "tial" },
    ]);
    const cut = { id: placed.run.id, sessionId: placed.sessionId, stepIndex: 0 };
    expect(await db.store.transaction((tx) => tx.steps.closeStreamingStep(cut))).toEqual({ index: 0, text: "partial" });
    expect(await db.query("select status, finish_reason from steps where run_id = $1", [placed.run.id])).toEqual([
      { status: "completed", finish_reason: "cancelled" },
    ]);
    expect(await db.store.transaction((tx) => tx.steps.closeStreamingStep(cut))).toBeUndefined();
  });
});
