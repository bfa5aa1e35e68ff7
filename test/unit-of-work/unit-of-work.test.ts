import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import type { NewEvent, SessionEvent } from "../../src/core/events.js";
import type { DispatchRequest, NextJob } from "../../src/core/next-job.js";
import type { RunId, SessionId } from "../../src/ids.js";
import { createEventBus, type EventBus } from "../../src/events/event-bus.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { createDispatcher, type Dispatcher } from "../../src/queue/dispatcher.js";
import { jobIdFor } from "../../src/queue/job-types.js";
import type { Store } from "../../src/store/store.js";
import { StaleWorkError, TransientConflictError } from "../../src/store/transact.js";
import { createUnitOfWork, type UnitOfWork } from "../../src/unit-of-work/unit-of-work.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { dropRedisPrefix } from "../helpers/test-env.js";
import { claimedStep, placedRun, type PlacedRun } from "../store/run-fixtures.js";

/**
 * The unit of work (src/unit-of-work/unit-of-work.ts): one store transaction, and what must happen
 * once it has committed (counts, events published, cancels broadcast, jobs enqueued), on a
 * database of its own and the suite's Redis under a queue prefix of its own. No worker consumes
 * the jobs: the queue is looked at directly.
 */

let db: StoreDb;
let redis: Redis;
let bus: EventBus;
let dispatcher: Dispatcher;
const redisUrl = inject("redisUrl");
const redisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true };
const prefix = `foya-test-uow-${randomBytes(5).toString("hex")}`;
const config = loadConfig({});
const metrics = createMetrics({ tenantLabels: 10 });

beforeAll(async () => {
  db = await createStoreDb();
  redis = new Redis(redisUrl, redisOptions);
  bus = createEventBus({ publisher: redis, createSubscriber: () => new Redis(redisUrl, redisOptions), prefix });
  dispatcher = createDispatcher({
    connection: redis,
    prefix,
    stepAttempts: config.runs.stepAttempts,
    stepShards: 1,
    hostId: "test-host",
    place: async () => ({ hostId: "test-host", epoch: 1 }),
  });
});

afterAll(async () => {
  await dispatcher?.close();
  await bus?.close();
  redis?.disconnect();
  await dropRedisPrefix(redisUrl, prefix);
  await db?.close();
});

const stepJob: NextJob = { kind: "step", stepIndex: 0 };
/** A run id no row has: what a test holds until its transaction made the run. */
const noRun: RunId = "run_none";
const batchJob: NextJob = { kind: "batch", stepIndex: 0 };
const status = (runId: RunId): NewEvent => ({ runId, step: null, body: { type: "run_status", status: "running" } });
const text = (runId: RunId, delta: string): NewEvent => ({
  runId,
  step: { index: 0, attempt: 1 },
  body: { type: "text_delta", text: delta },
});
const dispatchOf = (placed: PlacedRun, next: NextJob = stepJob): DispatchRequest => ({
  runId: placed.run.id,
  tenantId: placed.tenantId,
  next,
  redispatches: 0,
});

interface Watched {
  unitOfWork: UnitOfWork;
  /** What happened, in the order it happened: the transaction's end, then each effect as it was made. */
  log: string[];
  /** Effects that reached Redis while a second connection could not yet see their rows. */
  beforeTheirRows: string[];
}

/**
 * A unit of work on the real store, bus and dispatcher, watched: the store's transaction notes
 * when it committed or rolled back, and the bus and dispatcher note each effect as it reaches
 * them (only those that send something to Redis), with whether a second connection then finds
 * its rows, as a client reading the event log or a worker claiming the job would.
 */
function watched(surroundings: { bus?: EventBus } = {}): Watched {
  const log: string[] = [];
  const beforeTheirRows: string[] = [];
  const realBus = surroundings.bus ?? bus;
  const store = new Proxy(db.store, {
    get(target, key) {
      if (key !== "transaction") return Reflect.get(target, key);
      const transaction: Store["transaction"] = async (work) => {
        try {
          const value = await target.transaction(work);
          log.push("commit");
          return value;
        } catch (error) {
          log.push("rollback");
          throw error;
        }
      };
      return transaction;
    },
  });
  const watchedBus: EventBus = {
    ...realBus,
    async publish(events) {
      if (events.length > 0) {
        const entry = `publish ${events.map((event) => `${event.data.type} ${event.seq}`).join(", ")}`;
        log.push(entry);
        if (!(await eventsStored(events))) beforeTheirRows.push(entry);
      }
      return realBus.publish(events);
    },
    async publishCancel(runId) {
      log.push(`cancel ${runId}`);
      return realBus.publishCancel(runId);
    },
  };
  const watchedDispatcher: Dispatcher = {
    ...dispatcher,
    async dispatch(requests) {
      if (requests.length > 0) {
        const entry = `dispatch ${requests.map((request) => jobIdFor(request.runId, request.next, request.redispatches)).join(", ")}`;
        log.push(entry);
        if (!(await runsStored(requests.map((request) => request.runId)))) beforeTheirRows.push(entry);
      }
      return dispatcher.dispatch(requests);
    },
  };
  const unitOfWork = createUnitOfWork({ store, bus: watchedBus, dispatcher: watchedDispatcher, config, metrics });
  return { unitOfWork, log, beforeTheirRows };
}

async function eventsStored(events: readonly SessionEvent[]): Promise<boolean> {
  const [row] = await db.query<{ n: number }>(
    `select count(*)::int as n from events e
       join unnest($1::text[], $2::bigint[]) as p(session_id, seq) on e.session_id = p.session_id and e.seq = p.seq`,
    [events.map((event) => event.sessionId), events.map((event) => event.seq)],
  );
  return row?.n === events.length;
}

async function runsStored(runIds: readonly string[]): Promise<boolean> {
  const distinct = [...new Set(runIds)];
  const [row] = await db.query<{ n: number }>("select count(*)::int as n from runs where id = any($1::text[])", [distinct]);
  return row?.n === distinct.length;
}

async function rowsOfSession(sessionId: string): Promise<{ runs: number; events: number; eventSeq: number }> {
  const [row] = await db.query<{ runs: number; events: number; eventSeq: number }>(
    `select (select count(*)::int from runs where session_id = $1) as runs,
            (select count(*)::int from events where session_id = $1) as events,
            (select event_seq::int from sessions where id = $1) as "eventSeq"`,
    [sessionId],
  );
  if (!row) throw new Error(`no session ${sessionId}`);
  return row;
}

async function jobExists(request: DispatchRequest): Promise<boolean> {
  const queue = request.next.kind === "step" ? dispatcher.stepQueueFor(request.runId) : dispatcher.toolQueue;
  const epoch = request.next.kind === "batch" ? 1 : undefined;
  return (await queue.getJob(jobIdFor(request.runId, request.next, request.redispatches, epoch))) !== undefined;
}

/** A subscriber to a session's events on the real bus: `take(n)` waits for the first n to arrive. */
async function sessionSubscriber(sessionId: SessionId): Promise<{ take(count: number): Promise<SessionEvent[]>; stop(): void }> {
  const received: SessionEvent[] = [];
  let arrived = () => {};
  const stop = await bus.subscribe(sessionId, (event) => {
    received.push(event);
    arrived();
  });
  return {
    async take(count) {
      while (received.length < count) await new Promise<void>((resolve) => (arrived = resolve));
      return received.slice(0, count);
    },
    stop,
  };
}

describe("unit of work: effects after the commit", () => {
  it("D5, X4: effects run only after the commit: the failpoint, then the counts in the order registered, then events in the order appended, the cancel and the jobs in the order dispatched", async () => {
    const { unitOfWork, log, beforeTheirRows } = watched();
    const session = await db.newSession();
    const subscriber = await sessionSubscriber(session.sessionId);
    const cancels: string[] = [];
    const stopCancels = await bus.onCancel((runId) => cancels.push(runId));
    let runId: RunId = noRun;
    let next: NextJob = stepJob;
    const answer = await unitOfWork.transact(
      async (fx) => {
        const run = await fx.store.runs.insertRun({ tenantId: session.tenantId, sessionId: session.sessionId, input: "hello" });
        runId = run.id;
        const placed = await fx.store.runs.placeRun(run);
        next = placed.next;
        fx.afterCommit(() => log.push("count first"));
        await fx.emit(session.tenantId, session.sessionId, [
          { runId, step: null, body: { type: "run_start", runId, ordinal: placed.ordinal } },
        ]);
        // A statement that appends events itself: tracked, published in the same message, in sequence order.
        fx.track(await fx.store.events.appendEvents(session.tenantId, session.sessionId, [status(runId)]));
        await fx.emit(session.tenantId, session.sessionId, [text(runId, "hi")]);
        fx.dispatch({ runId, tenantId: session.tenantId, next: placed.next, redispatches: 0 });
        fx.dispatch({ runId, tenantId: session.tenantId, next: batchJob, redispatches: 0 });
        fx.cancel(runId);
        fx.afterCommit((given) => log.push(given === metrics ? "count second, with the unit's metrics" : "count second, other metrics"));
        expect(fx.quotas).toBe(config.quotas);
        log.push("work done");
        return "answer";
      },
      { afterCommit: () => log.push("failpoint") },
    );
    expect(answer).toBe("answer");
    expect(log.slice(0, 5)).toEqual(["work done", "commit", "failpoint", "count first", "count second, with the unit's metrics"]);
    // Publishing, cancels and dispatch go out together (none waits for another): no order among them.
    expect(log.slice(5).sort()).toEqual(
      [`publish run_start 1, run_status 2, text_delta 3`, `cancel ${runId}`, `dispatch step-${runId}-0, batch-${runId}-0`].sort(),
    );
    expect(beforeTheirRows).toEqual([]);
    const received = await subscriber.take(3);
    expect(received.map((event) => [event.seq, event.type])).toEqual([
      [1, "run_start"],
      [2, "run_status"],
      [3, "text_delta"],
    ]);
    await vi.waitFor(() => expect(cancels).toContain(runId));
    expect(await jobExists({ runId, tenantId: session.tenantId, next, redispatches: 0 })).toBe(true);
    expect(await jobExists({ runId, tenantId: session.tenantId, next: batchJob, redispatches: 0 })).toBe(true);
    subscriber.stop();
    stopCancels();
  });

  it("D5, X4: a transaction that throws leaves no rows, runs none of its effects and rejects with the work's error", async () => {
    const { unitOfWork, log } = watched();
    const session = await db.newSession();
    let runId: RunId = noRun;
    await expect(
      unitOfWork.transact(
        async (fx) => {
          const run = await fx.store.runs.insertRun({ tenantId: session.tenantId, sessionId: session.sessionId, input: "hello" });
          runId = run.id;
          const { ordinal } = await fx.store.runs.placeRun(run);
          await fx.emit(session.tenantId, session.sessionId, [{ runId, step: null, body: { type: "run_start", runId, ordinal } }]);
          fx.dispatch({ runId, tenantId: session.tenantId, next: stepJob, redispatches: 0 });
          fx.cancel(runId);
          fx.afterCommit(() => log.push("count"));
          throw new Error("the work gave up");
        },
        { afterCommit: () => log.push("failpoint") },
      ),
    ).rejects.toThrow("the work gave up");
    expect(log).toEqual(["rollback"]);
    expect(await rowsOfSession(session.sessionId)).toEqual({ runs: 0, events: 0, eventSeq: 0 });
    expect(await jobExists({ runId, tenantId: session.tenantId, next: stepJob, redispatches: 0 })).toBe(false);
  });

  it("D4: a fenced unit whose fence went stale answers null, leaves no rows and runs none of its effects; the holder's commits", async () => {
    const { unitOfWork, log } = watched();
    const placed = await placedRun(db);
    const gone = await claimedStep(db, placed, "worker-gone/job-1");
    await db.store.runs.releaseRunsOfWorker("worker-gone");
    const holder = await claimedStep(db, placed, "worker-b/job-1");
    expect(holder.fence).toBe(gone.fence + 1);

    const stepOf = (held: { id: RunId; fence: number }) =>
      unitOfWork.transactFenced(async (fx) => {
        await fx.emit(placed.tenantId, placed.sessionId, [text(placed.run.id, `from fence ${held.fence}`)]);
        fx.dispatch(dispatchOf(placed, batchJob));
        fx.cancel(placed.run.id);
        fx.afterCommit(() => log.push(`count fence ${held.fence}`));
        if (!(await fx.store.runs.lockHeldRun(held))) throw new StaleWorkError();
        return held.fence;
      });

    expect(await stepOf(gone)).toBeNull();
    expect(log).toEqual(["rollback"]);
    expect(await rowsOfSession(placed.sessionId)).toMatchObject({ events: 0, eventSeq: 0 });
    expect(await jobExists(dispatchOf(placed, batchJob))).toBe(false);

    expect(await stepOf(holder)).toBe(holder.fence);
    expect(log.slice(1, 3)).toEqual(["commit", `count fence ${holder.fence}`]);
    expect(log.slice(3).sort()).toEqual([`cancel ${placed.run.id}`, `dispatch batch-${placed.run.id}-0`, "publish text_delta 1"].sort());
    expect(await rowsOfSession(placed.sessionId)).toMatchObject({ events: 1, eventSeq: 1 });
    expect(await jobExists(dispatchOf(placed, batchJob))).toBe(true);
  });

  it("D4: only transactFenced turns a stale fence into null: transact rejects with StaleWorkError, and transactFenced rejects with any other error", async () => {
    const { unitOfWork, log } = watched();
    await expect(
      unitOfWork.transact(async () => {
        throw new StaleWorkError();
      }),
    ).rejects.toBeInstanceOf(StaleWorkError);
    await expect(
      unitOfWork.transactFenced(async () => {
        throw new Error("not a fence");
      }),
    ).rejects.toThrow("not a fence");
    expect(log).toEqual(["rollback", "rollback"]);
  });

  it("D4: a transaction retried after a conflict runs only the effects of the attempt that committed, once", async () => {
    const { unitOfWork, log } = watched();
    const session = await db.newSession();
    const runIds: RunId[] = [];
    const answer = await unitOfWork.transact(async (fx) => {
      const attempt = runIds.length + 1;
      const run = await fx.store.runs.insertRun({ tenantId: session.tenantId, sessionId: session.sessionId, input: `attempt ${attempt}` });
      runIds.push(run.id);
      const { ordinal, next } = await fx.store.runs.placeRun(run);
      await fx.emit(session.tenantId, session.sessionId, [
        { runId: run.id, step: null, body: { type: "run_start", runId: run.id, ordinal } },
      ]);
      fx.dispatch({ runId: run.id, tenantId: session.tenantId, next, redispatches: 0 });
      fx.afterCommit(() => log.push(`count attempt ${attempt}`));
      if (attempt === 1) throw new TransientConflictError("the session's active run changed");
      return run.id;
    });
    const [first, second] = runIds;
    expect(runIds).toHaveLength(2);
    expect(answer).toBe(second);
    expect(log.slice(0, 3)).toEqual(["rollback", "commit", "count attempt 2"]);
    // The first attempt's event rolled back with its sequence number: the committed one is 1 again.
    expect(log.slice(3).sort()).toEqual([`dispatch step-${second}-0`, "publish run_start 1"].sort());
    expect(await rowsOfSession(session.sessionId)).toEqual({ runs: 1, events: 1, eventSeq: 1 });
    expect(await jobExists({ runId: first ?? noRun, tenantId: session.tenantId, next: stepJob, redispatches: 0 })).toBe(false);
  });
});

describe("unit of work: an effect that fails after the commit", () => {
  it("X4, D5: a count that throws rejects the unit once every effect ran: the commit stays, the counts after it, the publishing and the dispatch still happen, and nothing is retried", async () => {
    const { unitOfWork, log } = watched();
    const placed = await placedRun(db);
    let attempts = 0;
    await expect(
      unitOfWork.transact(async (fx) => {
        attempts += 1;
        await fx.emit(placed.tenantId, placed.sessionId, [status(placed.run.id)]);
        fx.dispatch(dispatchOf(placed));
        fx.afterCommit(() => log.push("count first"));
        fx.afterCommit(() => {
          throw new Error("counting failed");
        });
        fx.afterCommit(() => log.push("count third"));
      }),
    ).rejects.toThrow("counting failed");
    expect(attempts).toBe(1);
    expect(log.slice(0, 3)).toEqual(["commit", "count first", "count third"]);
    expect(log.slice(3).sort()).toEqual([`dispatch step-${placed.run.id}-0`, "publish run_status 1"]);
    expect(await rowsOfSession(placed.sessionId)).toMatchObject({ runs: 1, events: 1, eventSeq: 1 });
    // Answered only after the enqueue settled: the job is there when the caller sees the failure.
    expect(await jobExists(dispatchOf(placed))).toBe(true);
  });

  it("D5: a publish that fails after the commit rejects the unit with Redis's error, once; the rows stay and the jobs are still enqueued", async () => {
    const closed = new Redis(redisUrl, redisOptions);
    await closed.ping();
    closed.disconnect();
    const brokenBus = createEventBus({ publisher: closed, createSubscriber: () => new Redis(redisUrl, redisOptions), prefix });
    const { unitOfWork, log, beforeTheirRows } = watched({ bus: brokenBus });
    const placed = await placedRun(db);
    let attempts = 0;
    await expect(
      unitOfWork.transact(async (fx) => {
        attempts += 1;
        await fx.emit(placed.tenantId, placed.sessionId, [status(placed.run.id)]);
        fx.dispatch(dispatchOf(placed));
        fx.afterCommit(() => log.push("count"));
      }),
    ).rejects.toThrow("Connection is closed");
    expect(attempts).toBe(1);
    expect(log.slice(0, 2)).toEqual(["commit", "count"]);
    expect(log.slice(2).sort()).toEqual([`dispatch step-${placed.run.id}-0`, "publish run_status 1"]);
    expect(beforeTheirRows).toEqual([]);
    expect(await rowsOfSession(placed.sessionId)).toMatchObject({ runs: 1, events: 1, eventSeq: 1 });
    // The unit answers once every effect settled: the enqueue beside the failed publish is done.
    expect(await jobExists(dispatchOf(placed))).toBe(true);
    await brokenBus.close();
  });
});

describe("unit of work: units never share effects", () => {
  it("one unit after another publishes and dispatches only its own", async () => {
    const { unitOfWork, log } = watched();
    const first = await placedRun(db);
    const second = await placedRun(db);
    await unitOfWork.transact(async (fx) => {
      await fx.emit(first.tenantId, first.sessionId, [status(first.run.id)]);
      fx.dispatch(dispatchOf(first));
      fx.cancel(first.run.id);
      fx.afterCommit(() => log.push("count first unit"));
    });
    const firstLog = log.splice(0);
    await unitOfWork.transact(async (fx) => {
      await fx.emit(second.tenantId, second.sessionId, [text(second.run.id, "a"), text(second.run.id, "b")]);
      fx.afterCommit(() => log.push("count second unit"));
    });
    expect(firstLog.slice(0, 2)).toEqual(["commit", "count first unit"]);
    expect(firstLog.slice(2).sort()).toEqual([`cancel ${first.run.id}`, `dispatch step-${first.run.id}-0`, "publish run_status 1"].sort());
    expect(log).toEqual(["commit", "count second unit", "publish text_delta 1, text_delta 2"]);
  });

  it("a unit started inside another's work is a transaction of its own: its effects run at its commit, and the outer one's rollback neither undoes them nor runs its own", async () => {
    const { unitOfWork, log } = watched();
    const outer = await placedRun(db);
    const inner = await placedRun(db);
    await expect(
      unitOfWork.transact(async (fx) => {
        await fx.emit(outer.tenantId, outer.sessionId, [status(outer.run.id)]);
        fx.dispatch(dispatchOf(outer));
        fx.afterCommit(() => log.push("count outer"));
        await unitOfWork.transact(async (innerFx) => {
          await innerFx.emit(inner.tenantId, inner.sessionId, [status(inner.run.id)]);
          innerFx.dispatch(dispatchOf(inner));
          innerFx.afterCommit(() => log.push("count inner"));
        });
        log.push("inner returned");
        throw new Error("the outer work gave up");
      }),
    ).rejects.toThrow("the outer work gave up");
    expect(log.slice(0, 2)).toEqual(["commit", "count inner"]);
    expect(log.slice(2, 4).sort()).toEqual([`dispatch step-${inner.run.id}-0`, "publish run_status 1"].sort());
    expect(log.slice(4)).toEqual(["inner returned", "rollback"]);
    expect(await rowsOfSession(inner.sessionId)).toMatchObject({ events: 1, eventSeq: 1 });
    expect(await rowsOfSession(outer.sessionId)).toMatchObject({ events: 0, eventSeq: 0 });
    expect(await jobExists(dispatchOf(inner))).toBe(true);
    expect(await jobExists(dispatchOf(outer))).toBe(false);
  });

  it("units open at the same time each publish and dispatch only their own", async () => {
    const { unitOfWork, log } = watched();
    const [first, second] = await Promise.all([placedRun(db), placedRun(db)]);
    // Both transactions are open, their effects registered, before either commits.
    let registered = 0;
    let bothRegistered = () => {};
    const bothOpen = new Promise<void>((resolve) => (bothRegistered = resolve));
    const unitFor = (placed: PlacedRun, delta: string) =>
      unitOfWork.transact(async (fx) => {
        await fx.emit(placed.tenantId, placed.sessionId, [text(placed.run.id, delta)]);
        fx.dispatch(dispatchOf(placed));
        registered += 1;
        if (registered === 2) bothRegistered();
        await bothOpen;
      });
    await Promise.all([unitFor(first, "first"), unitFor(second, "second")]);
    const publishes = log.filter((entry) => entry.startsWith("publish"));
    const dispatches = log.filter((entry) => entry.startsWith("dispatch"));
    expect(publishes).toEqual(["publish text_delta 1", "publish text_delta 1"]);
    expect(dispatches.sort()).toEqual([`dispatch step-${first.run.id}-0`, `dispatch step-${second.run.id}-0`].sort());
    const [firstEvents, secondEvents] = await Promise.all([
      db.store.events.readEvents(first.tenantId, first.sessionId, 0),
      db.store.events.readEvents(second.tenantId, second.sessionId, 0),
    ]);
    expect(firstEvents.map((event) => event.data)).toEqual([{ type: "text_delta", text: "first" }]);
    expect(secondEvents.map((event) => event.data)).toEqual([{ type: "text_delta", text: "second" }]);
  });
});
