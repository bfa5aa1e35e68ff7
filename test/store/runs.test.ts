import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStoreDb, testPlacement, type StoreDb } from "../helpers/store-db.js";
import { batchJob, claimedBatch, claimedStep, leaseMs, placedRun, runRow, stepJob } from "./run-fixtures.js";

/** `store.runs`: each guarded statement of a run's claims, leases and transitions, on Postgres. */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

describe("store.runs claims", () => {
  it("D4: a claim takes the lease and bumps the fence; another job's claim waits while that lease lives", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed, "worker-a/job-1");
    expect(held).toMatchObject({ status: "running", fence: placed.run.fence + 1, leaseOwner: "worker-a/job-1" });
    const second = await db.store.runs.claimStep({
      runId: placed.run.id,
      stepIndex: 0,
      next: stepJob,
      owner: "worker-b/job-1",
      leaseMs,
      historyAfter: { runOrdinal: -1, stepIndex: -2, part: 0, callIndex: 0 },
    });
    expect(second.kind).toBe("busy");
    expect((await runRow(db, placed.run.id)).fence).toBe(held.fence);
  });

  it("D4, D9: once a dead worker's leases are released, another job claims the run and the old fence is stale", async () => {
    const placed = await placedRun(db);
    const first = await claimedStep(db, placed, "worker-dead/job-1");
    const released = await db.store.runs.releaseRunsOfWorker("worker-dead");
    expect(released.map((row) => row.id)).toContain(placed.run.id);
    const second = await claimedStep(db, placed, "worker-b/job-1");
    expect(second.fence).toBe(first.fence + 1);
    expect(await db.store.runs.lockHeldRun(first)).toBe(false);
  });

  it("D4: the lease renewal skips a run whose row another statement holds and renews the process's other runs without waiting", async () => {
    const [a, b] = await Promise.all([placedRun(db), placedRun(db)]);
    const heldA = await claimedStep(db, a, "lease-keeper/a");
    await claimedStep(db, b, "lease-keeper/b");
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked = () => {};
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holding = db.store.transaction(async (tx) => {
      expect(await tx.runs.lockHeldRun(heldA)).toBe(true);
      locked();
      await released;
    });
    await isLocked;
    const renewal = db.store.runs.renewLeases(["lease-keeper/a", "lease-keeper/b"], 600_000).then(() => "renewed");
    const outcome = await Promise.race([renewal, new Promise((resolve) => setTimeout(() => resolve("waiting"), 5_000))]);
    release();
    await holding;
    await renewal;
    expect(outcome).toBe("renewed");
    const leases = await db.query<{ id: string; renewed: boolean }>(
      "select id, lease_until > now() + interval '500 seconds' as renewed from runs where id = any($1) order by id = $2 desc",
      [[a.run.id, b.run.id], a.run.id],
    );
    expect(leases).toEqual([
      { id: a.run.id, renewed: false },
      { id: b.run.id, renewed: true },
    ]);
  });

  it("D4: a claim for a job the run no longer needs, or of a run that ended, is refused as gone", async () => {
    const placed = await placedRun(db);
    const wrongJob = await db.store.runs.claimBatch({
      runId: placed.run.id,
      stepIndex: 0,
      next: batchJob,
      owner: "w/j",
      leaseMs,
      startPreGranted: false,
      placement: testPlacement,
    });
    expect(wrongJob).toEqual({ kind: "gone", reason: "run does not need this job" });
    expect(await db.store.runs.finishRun(placed.run, "cancelled", {})).not.toBeNull();
    const ended = await db.store.runs.claimStep({
      runId: placed.run.id,
      stepIndex: 0,
      next: stepJob,
      owner: "w/j",
      leaseMs,
      historyAfter: { runOrdinal: -1, stepIndex: -2, part: 0, callIndex: 0 },
    });
    expect(ended).toEqual({ kind: "gone", reason: "run is cancelled" });
  });

  it("D1: a step claim reads the run's history after the position given, and counts the step's attempt", async () => {
    const placed = await placedRun(db);
    const input = { runOrdinal: placed.run.ordinal, stepIndex: -1, part: 0 as const, callIndex: 0 };
    const owner = { tenantId: placed.tenantId, sessionId: placed.sessionId, runId: placed.run.id };
    await db.store.messages.insertMessage(owner, input, { role: "user", text: "hello" });
    const claim = (historyAfter: typeof input, job: string) =>
      db.store.runs.claimStep({ runId: placed.run.id, stepIndex: 0, next: stepJob, owner: `w/${job}`, leaseMs, historyAfter });
    const whole = await claim({ runOrdinal: -1, stepIndex: -2, part: 0, callIndex: 0 }, "1");
    if (whole.kind !== "claimed") throw new Error(whole.kind);
    expect(whole.extra.attempt).toBe(1);
    // The run's first step: no previous step whose tool order to keep (PR4).
    expect(whole.extra.previousTools).toEqual([]);
    expect(whole.extra.history).toEqual([{ message: { role: "user", text: "hello" }, position: input }]);
    await db.store.runs.releaseRunsOfWorker("w");
    const after = await claim(input, "2");
    if (after.kind !== "claimed") throw new Error(after.kind);
    expect(after.extra.history).toEqual([]);
  });
  it("D4, D1: step claims of many runs in one statement: each row claims its own run under its own guard and reads its own history; a busy or gone row is explained alone", async () => {
    const placed = await Promise.all([0, 1, 2, 3].map(() => placedRun(db)));
    for (const one of placed) {
      const owner = { tenantId: one.tenantId, sessionId: one.sessionId, runId: one.run.id };
      const input = { runOrdinal: one.run.ordinal, stepIndex: -1, part: 0 as const, callIndex: 0 };
      await db.store.messages.insertMessage(owner, input, { role: "user", text: `hello ${one.run.id}` });
    }
    const [a, busy, gone, d] = placed as [(typeof placed)[0], (typeof placed)[0], (typeof placed)[0], (typeof placed)[0]];
    // Another job holds the second run's lease; the third run no longer needs a step job (its next job is a batch).
    const holder = await claimedStep(db, busy, "worker-b/job-9");
    const request = (one: (typeof placed)[0], next = stepJob) => ({
      runId: one.run.id,
      stepIndex: 0,
      next,
      owner: "worker-a/job-1",
      leaseMs,
      historyAfter: { runOrdinal: -1, stepIndex: -2, part: 0 as const, callIndex: 0 },
    });
    const claims = await db.store.runs.claimSteps([request(a), request(busy), request(gone, batchJob), request(d)]);
    expect(claims.map((claim) => claim.kind)).toEqual(["claimed", "busy", "gone", "claimed"]);
    for (const [index, one] of [a, d].entries()) {
      const claim = claims[index === 0 ? 0 : 3];
      if (claim?.kind !== "claimed") throw new Error("not claimed");
      expect(claim.run).toMatchObject({ id: one.run.id, fence: one.run.fence + 1, leaseOwner: "worker-a/job-1" });
      expect(claim.extra.history.map((entry) => entry.message)).toEqual([{ role: "user", text: `hello ${one.run.id}` }]);
      expect(claim.extra.attempt).toBe(1);
    }
    expect((await runRow(db, busy.run.id)).fence).toBe(holder.fence);
    expect((await runRow(db, gone.run.id)).fence).toBe(gone.run.fence);
  });

  it("D4: two claims of one run that arrive together never share a statement: one claims, the other finds the lease busy", async () => {
    const placed = await placedRun(db);
    const claim = (owner: string) =>
      db.store.runs.claimStep({
        runId: placed.run.id,
        stepIndex: 0,
        next: stepJob,
        owner,
        leaseMs,
        historyAfter: { runOrdinal: -1, stepIndex: -2, part: 0, callIndex: 0 },
      });
    const both = await Promise.all([claim("worker-a/job-1"), claim("worker-b/job-1")]);
    expect(both.map((one) => one.kind).sort()).toEqual(["busy", "claimed"]);
    expect((await runRow(db, placed.run.id)).fence).toBe(placed.run.fence + 1);
  });
  it("D4, W3, D5: batch claims of many runs in one statement: each row is fenced by its own placement and starts its own pre-granted first group, with its events gap-free", async () => {
    const placed = await Promise.all([0, 1, 2].map(() => placedRun(db)));
    for (const one of placed) {
      const step = await claimedStep(db, one);
      const toolCalls = ["probe", "read"].map((name, index) => ({ callId: `call-${index}`, name, argumentsRaw: "{}" }));
      const preGrants = new Map([
        [0, { network: false }],
        [1, { network: false }],
      ]);
      await db.store.steps.commitStep(
        step,
        { index: 0, attempt: 1, tools: ["probe", "read"] },
        { text: "", toolCalls, finish: { reason: "tool_calls" }, pendingEvents: [], preGrants },
      );
    }
    const [a, b, c] = placed as [(typeof placed)[0], (typeof placed)[0], (typeof placed)[0]];
    const lastSeq = async (sessionId: string) =>
      (await db.query<{ seq: number }>("select coalesce(max(seq), 0)::int as seq from events where session_id = $1", [sessionId]))[0]
        ?.seq as number;
    const before = await lastSeq(a.sessionId);
    const request = (one: (typeof placed)[0], startPreGranted: boolean, placement = testPlacement) => ({
      runId: one.run.id,
      stepIndex: 0,
      next: batchJob,
      owner: "worker-a/job-2",
      leaseMs,
      startPreGranted,
      placement,
    });
    const fenceOfC = (await runRow(db, c.run.id)).fence;
    const claims = await db.store.runs.claimBatches([
      request(a, true),
      // The tenant's calls take quota slots one by one: nothing starts in the claim.
      request(b, false),
      // Routed by an earlier placement: claims nothing.
      request(c, true, { ...testPlacement, epoch: testPlacement.epoch + 1 }),
    ]);
    expect(claims.map((claim) => claim.kind)).toEqual(["claimed", "claimed", "gone"]);
    const [first, second] = claims;
    if (first?.kind !== "claimed" || second?.kind !== "claimed") throw new Error("not claimed");
    expect(first.extra.calls.map((call) => [call.status, call.execFence])).toEqual([
      ["running", first.run.fence],
      ["running", first.run.fence],
    ]);
    expect(second.extra.startedIds.size).toBe(0);
    expect(second.extra.calls.map((call) => call.status)).toEqual(["queued", "queued"]);
    const stored = await db.query<{ seq: number; type: string }>(
      "select seq::int, type from events where session_id = $1 and seq > $2 order by seq",
      [a.sessionId, before],
    );
    expect(stored).toEqual(first.extra.startedEvents.map((event) => ({ seq: event.seq, type: event.type })));
    expect(stored.map((event) => event.seq)).toEqual([before + 1, before + 2]);
    expect(await db.query("select status from tool_calls where run_id = $1 order by call_index", [b.run.id])).toEqual([
      { status: "queued" },
      { status: "queued" },
    ]);
    expect((await runRow(db, c.run.id)).fence).toBe(fenceOfC);
  });
});

describe("store.runs transitions", () => {
  it("D4: a hand-off to the next step with a stale fence is refused; the holder's moves the run on and releases its lease", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    expect(await db.store.runs.moveToNextStep({ ...batch.held, fence: batch.held.fence - 1 }, 1)).toBeUndefined();
    expect(await db.store.runs.moveToNextStep(batch.held, 1)).toEqual({ kind: "step", stepIndex: 1 });
    expect(await runRow(db, batch.run.id)).toMatchObject({
      stepIndex: 1,
      nextJob: { kind: "step", stepIndex: 1 },
      leaseOwner: null,
      redispatches: 0,
    });
  });

  it("D4: a hand-off of a run no longer on the job its holder claimed is refused", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    const resumed = { ...batch.held, nextJob: { kind: "batch" as const, stepIndex: 0, resume: 7 } };
    expect(await db.store.runs.moveToNextStep(resumed, 1)).toBeUndefined();
    expect((await runRow(db, batch.run.id)).stepIndex).toBe(0);
  });

  it("D6: a parked run holds no job and no lease; only a parked run resumes, with a job of its own per park", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    expect(await db.store.runs.resumeParkedRun(batch.held, 0)).toBeUndefined();
    expect(await db.store.runs.parkRun({ ...batch.held, fence: batch.held.fence - 1 }, "awaiting_approval")).toBe(false);
    expect(await db.store.runs.parkRun(batch.held, "awaiting_approval")).toBe(true);
    expect(await runRow(db, batch.run.id)).toMatchObject({
      status: "awaiting_approval",
      nextJob: null,
      leaseOwner: null,
      leaseUntil: null,
    });
    expect(await db.store.runs.resumeParkedRun(batch.held, 0)).toEqual({ kind: "batch", stepIndex: 0, resume: batch.held.fence });
    expect(await runRow(db, batch.run.id)).toMatchObject({
      status: "running",
      nextJob: { kind: "batch", stepIndex: 0, resume: batch.held.fence },
    });
    expect(await db.store.runs.resumeParkedRun(batch.held, 0)).toBeUndefined();
  });

  it("D2, D4: a run ends once, from a status that leads to its end, and only by the fence's holder when one is given", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    expect(await db.store.runs.finishRun(placed.run, "completed", { fence: held.fence - 1 })).toBeNull();
    const finished = await db.store.runs.finishRun(placed.run, "completed", { fence: held.fence });
    // Its run_end is appended in the same statement, and the session's slot is given back.
    expect(finished?.events.map((event) => event.data)).toEqual([{ type: "run_end", status: "completed" }]);
    expect(finished?.released).toBe(true);
    const ended = await runRow(db, placed.run.id);
    expect(ended).toMatchObject({ status: "completed", nextJob: null, leaseOwner: null, fence: held.fence + 1 });
    expect(ended.endedAt).not.toBeNull();
    expect(await db.store.runs.finishRun(placed.run, "cancelled", {})).toBeNull();
    expect((await runRow(db, placed.run.id)).status).toBe("completed");
  });

  it("D4: a job gives its run back for a retry only while it holds the fence", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    expect(await db.store.runs.releaseForRetry({ ...held, fence: held.fence - 1 })).toBeUndefined();
    expect(await db.store.runs.releaseForRetry(held)).toBe(1);
    expect(await runRow(db, placed.run.id)).toMatchObject({ redispatches: 1, leaseOwner: null, leaseUntil: null });
  });

  it("PR3: a step waiting for its provider gives its lease back only while it holds the fence, keeping its job", async () => {
    const placed = await placedRun(db);
    const held = await claimedStep(db, placed);
    expect(await db.store.runs.releaseLease({ ...held, fence: held.fence - 1 })).toBe(false);
    expect(await db.store.runs.releaseLease(held)).toBe(true);
    expect(await runRow(db, placed.run.id)).toMatchObject({
      status: "running",
      redispatches: 0,
      leaseOwner: null,
      leaseUntil: null,
      nextJob: stepJob,
    });
  });

  it("X4: a lost job is redispatched once per reading of it: a second redispatch from the same reading is refused", async () => {
    const placed = await placedRun(db);
    const lost = { id: placed.run.id, nextJob: stepJob, redispatches: 0 };
    expect(await db.store.runs.redispatchLostJob(lost)).toBe(1);
    expect(await db.store.runs.redispatchLostJob(lost)).toBeUndefined();
    expect(await db.store.runs.redispatchLostJob({ ...lost, redispatches: 1, nextJob: batchJob })).toBeUndefined();
  });

  it("X4: the sweeper finds a run that needs a job and holds no live lease, never one a job holds", async () => {
    const waiting = await placedRun(db);
    const leased = await placedRun(db);
    await claimedStep(db, leased);
    const found = (await db.store.runs.lostJobCandidates(0, 1000)).map((row) => row.id);
    expect(found).toContain(waiting.run.id);
    expect(found).not.toContain(leased.run.id);
  });

  it("D10: a run counts its interruptions up to the limit, only under its holder's fence", async () => {
    const batch = await claimedBatch(db, ["probe"]);
    expect(await db.store.runs.countInterruption({ ...batch.held, fence: batch.held.fence - 1 }, 2)).toBeUndefined();
    expect(await db.store.runs.countInterruption(batch.held, 2)).toBe(1);
    expect(await db.store.runs.countInterruption(batch.held, 2)).toBe(2);
    expect(await db.store.runs.countInterruption(batch.held, 2)).toBeUndefined();
  });

  it("R5: activated tools join the run's sorted, distinct list, only under the batch's fence", async () => {
    const batch = await claimedBatch(db, ["tool_search"]);
    await db.store.runs.addActivatedTools({ ...batch.held, fence: batch.held.fence - 1 }, ["stale"]);
    await db.store.runs.addActivatedTools(batch.held, ["zeta", "alpha"]);
    await db.store.runs.addActivatedTools(batch.held, ["alpha", "beta"]);
    expect((await runRow(db, batch.run.id)).activatedTools).toEqual(["alpha", "beta", "zeta"]);
  });

  it("X6: a run is placed in its session once; its end frees the session for the oldest run waiting", async () => {
    const placed = await placedRun(db);
    await expect(db.store.transaction((tx) => tx.runs.placeRun(placed.run))).rejects.toThrow(/already has a place/);
    const waiting = await db.store.runs.insertRun({ tenantId: placed.tenantId, sessionId: placed.sessionId, input: "next" });
    // A run that is not the session's active one ends without releasing the slot.
    const other = await db.store.runs.finishRun(waiting, "cancelled", {});
    expect(other?.released).toBe(false);
    const behind = await db.store.runs.insertRun({ tenantId: placed.tenantId, sessionId: placed.sessionId, input: "next" });
    expect(await db.store.runs.afterRunEnd(placed.run)).toMatchObject({ sessionWaits: true, parentWaits: false });
    const finished = await db.store.runs.finishRun(placed.run, "cancelled", {});
    expect(finished?.released).toBe(true);
    expect(await db.query("select active_run_id from sessions where id = $1", [placed.sessionId])).toEqual([{ active_run_id: null }]);
    const next = await db.store.transaction((tx) => tx.runs.lockNextInSession(placed.sessionId));
    expect(next?.id).toBe(behind.id);
  });
});

describe("store.runs activation", () => {
  it("X6, D5, X4: activating a run gives it the session's next ordinal, its first job (the outbox), the user message and run_start at the next sequence number, in one statement; a second activation throws", async () => {
    const session = await db.newSession();
    const queued = async (input: string) =>
      db.store.transaction((tx) => tx.runs.insertRun({ tenantId: session.tenantId, sessionId: session.sessionId, input }));
    const first = await queued("first");
    const second = await queued("second");
    const a = await db.store.runs.activateRun(first);
    expect(a.ordinal).toBe(1);
    expect(a.next).toEqual(stepJob);
    expect(a.events.map((event) => ({ seq: event.seq, type: event.type, data: event.data }))).toEqual([
      { seq: 1, type: "run_start", data: { type: "run_start", runId: first.id, ordinal: 1 } },
    ]);
    const b = await db.store.runs.activateRun(second);
    expect([b.ordinal, b.events[0]?.seq]).toEqual([2, 2]);
    // What was stored is what the caller publishes.
    expect(await db.store.events.readEvents(session.tenantId, session.sessionId, 0, { limit: 10 })).toEqual([...a.events, ...b.events]);
    expect(
      await db.query("select role, content, run_ordinal from messages where session_id = $1 order by run_ordinal", [session.sessionId]),
    ).toEqual([
      { role: "user", content: { role: "user", text: "first" }, run_ordinal: 1 },
      { role: "user", content: { role: "user", text: "second" }, run_ordinal: 2 },
    ]);
    expect(await runRow(db, second.id)).toMatchObject({ ordinal: 2, nextJob: stepJob });
    expect(await db.query("select active_run_id, run_count, event_seq from sessions where id = $1", [session.sessionId])).toEqual([
      { active_run_id: second.id, run_count: 2, event_seq: "2" },
    ]);
    await expect(db.store.runs.activateRun(first)).rejects.toThrow(/has a place already/);
    expect(await db.query("select run_count from sessions where id = $1", [session.sessionId])).toEqual([{ run_count: 2 }]);
  });
});

describe("store.runs acceptance", () => {
  it("X5, X6, X4: a turn on a free session is inserted and activated in one statement when its tenant has a slot, with the session's default onInterrupted; with none free it holds the session's slot without a place", async () => {
    const session = await db.newSession();
    const accepted = await db.store.runs.acceptRun({ tenantId: session.tenantId, sessionId: session.sessionId, input: "hello" }, 5);
    if (accepted?.kind !== "activated") throw new Error(`expected an activated run, got ${accepted?.kind}`);
    expect(accepted.run).toMatchObject({ status: "queued", ordinal: 1, nextJob: stepJob, onInterrupted: "end", input: "hello" });
    expect(accepted.events.map((event) => [event.seq, event.type])).toEqual([[1, "run_start"]]);
    expect(await db.store.events.readEvents(session.tenantId, session.sessionId, 0, { limit: 10 })).toEqual(accepted.events);
    expect(await db.query("select content from messages where run_id = $1", [accepted.run.id])).toEqual([
      { content: { role: "user", text: "hello" } },
    ]);
    // The session has an active run now: nothing is written, the caller reads again.
    expect(await db.store.runs.acceptRun({ tenantId: session.tenantId, sessionId: session.sessionId, input: "again" }, 5)).toBeUndefined();
    expect(await db.query("select count(*)::int as n from runs where session_id = $1", [session.sessionId])).toEqual([{ n: 1 }]);

    // The tenant's one slot is taken by that run: a turn on its second session holds that session's slot.
    const second = await db.store.sessions.insertSession({
      id: `ses_accept_${accepted.run.id}`,
      tenantId: session.tenantId,
      projectId: session.projectId,
      approvalMode: "auto",
      providerProfile: "scripted",
      runMode: "normal",
    });
    if (!second) throw new Error("no session");
    const held = await db.store.runs.acceptRun(
      { tenantId: session.tenantId, sessionId: second.id, input: "waits", onInterrupted: "continue" },
      1,
    );
    expect(held?.kind).toBe("holding");
    expect(held?.run).toMatchObject({ ordinal: null, nextJob: null, onInterrupted: "continue" });
    expect(await db.query("select active_run_id, run_count, event_seq from sessions where id = $1", [second.id])).toEqual([
      { active_run_id: held?.run.id, run_count: 0, event_seq: "0" },
    ]);
    // Another tenant's session, or a deleted one, is never taken.
    const other = await db.newSession();
    expect(await db.store.runs.acceptRun({ tenantId: session.tenantId, sessionId: other.sessionId, input: "x" }, 5)).toBeUndefined();
    await db.query("update sessions set deleted_at = now() where id = $1", [other.sessionId]);
    expect(await db.store.runs.acceptRun({ tenantId: other.tenantId, sessionId: other.sessionId, input: "x" }, 5)).toBeUndefined();
  });
});
