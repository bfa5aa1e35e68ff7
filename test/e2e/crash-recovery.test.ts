import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunId } from "../../src/ids.js";
import { jobIdFor } from "../../src/queue/job-types.js";
import { readMarkers } from "../fixtures/test-tools.js";
import { ApiClient, script, waitFor } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { sample } from "../helpers/prometheus-text.js";
import { freePort } from "../helpers/free-port.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
const processes: FoyaProcess[] = [];

async function start(role: "api" | "worker", extra: Record<string, string> = {}): Promise<FoyaProcess> {
  const child = await startFoyaProcess(role, { ...env.env, ...extra });
  processes.push(child);
  return child;
}

/**
 * Worker processes the tests share: a test takes as many as it needs (`workers`), and one a test
 * kills or freezes leaves the pool. A worker start costs about a second of CPU, and a worker that
 * is already running when another is killed takes its work over without a start in between.
 * Each serves metrics and logs warnings, so a test can tell what one of them did.
 */
const pool: Array<{ process: FoyaProcess; workerId: string; metricsUrl: string }> = [];

/** At least `count` pool workers, started side by side where some are missing. */
async function workers(count: number): Promise<void> {
  const started = await Promise.all(
    Array.from({ length: Math.max(0, count - pool.length) }, async () => {
      const child = await start("worker", { FOYA_METRICS_PORT: String(await freePort()), LOG_LEVEL: "warn" });
      const [workerId, metricsUrl] = await Promise.all(
        [/FOYA_WORKER_ID=(\S+)/, /FOYA_METRICS_URL=(\S+)/].map(async (line) => (await child.waitForOutput(line))[1]!),
      );
      return { process: child, workerId: workerId!, metricsUrl: metricsUrl! };
    }),
  );
  pool.push(...started);
}

/** Takes a worker out of the pool, for a test to kill or freeze. */
function leavePool(worker: (typeof pool)[number] | undefined): FoyaProcess {
  expect(worker, "a pool worker").toBeDefined();
  pool.splice(pool.indexOf(worker!), 1);
  return worker!.process;
}

/** The pool worker whose job holds the run's lease (its owner is `<worker id>/<job id>`), taken out of the pool. */
async function leaseHolder(runId: string): Promise<FoyaProcess> {
  const [run] = await env.query<{ owner: string | null }>("select lease_owner as owner from runs where id = $1", [runId]);
  return leavePool(pool.find((worker) => run?.owner?.startsWith(`${worker.workerId}/`)));
}

/** How many tool-batch jobs a pool worker has ended, by its metrics. */
async function toolJobsEnded(metricsUrl: string): Promise<number> {
  return sample(await (await fetch(metricsUrl)).text(), "foya_job_duration_seconds_count", { queue: "tools" }) ?? 0;
}

/** Ids of every job BullMQ holds for a run, in either queue. */
async function jobIdsOf(runId: string): Promise<string[]> {
  const { toolQueue } = env.services.dispatcher;
  const stepQueue = env.services.dispatcher.stepQueueFor(runId as RunId);
  const states = ["completed", "failed", "waiting", "prioritized", "active", "delayed"] as const;
  const jobs = [...(await stepQueue.getJobs([...states])), ...(await toolQueue.getJobs([...states]))];
  return jobs.filter((job) => job?.data.runId === runId).map((job) => job.id as string);
}

beforeAll(async () => {
  // A killed worker's jobs come back within a quarter second of its BullMQ lock lapsing, not a
  // second: the lock, not how often this check runs, says whether a job is stalled.
  env = await createTestEnv({ FOYA_STALLED_INTERVAL_MS: "250" });
  client = await env.newTenant();
});
afterAll(async () => {
  for (const child of processes) child.kill("SIGKILL");
  await Promise.all(processes.map((child) => child.exited));
  await env?.close();
});

describe("crash recovery", () => {
  it("D3: in a batch of 7 parallel calls killed while the first 5 run, only those 5 are interrupted; the 2 that never started are cancelled as not run", async () => {
    // The one running the batch is killed; the other takes the run over.
    await workers(2);
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const calls = Array.from({ length: 7 }, () => ({ tool: "probe", args: { marker: "d3-seven", sleepMs: 60_000 } }));
    const run = await client.startRun(sessionId, script([calls, [{ text: "never" }]]));
    await waitFor(async () => (await readMarkers(workspace, "d3-seven")).length === 5, 20_000, "five calls to start");
    const [running] = await env.query<{ running: number; queued: number }>(
      "select count(*) filter (where status = 'running')::int as running, count(*) filter (where status = 'queued')::int as queued from tool_calls where run_id = $1",
      [run.body.id],
    );
    expect(running).toEqual({ running: 5, queued: 2 });
    const worker = await leaseHolder(run.body.id);
    worker.kill("SIGKILL");
    expect((await worker.exited).signal).toBe("SIGKILL");

    expect((await client.waitForRun(run.body.id, 30_000)).status).toBe("interrupted");
    const ended = await env.query<{ call_index: number; status: string; error_code: string }>(
      "select call_index, status, error_code from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(ended.map((call) => call.status)).toEqual([
      "interrupted",
      "interrupted",
      "interrupted",
      "interrupted",
      "interrupted",
      "cancelled",
      "cancelled",
    ]);
    expect(ended.slice(5).map((call) => call.error_code)).toEqual(["not_run_interrupted", "not_run_interrupted"]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const notRun = messages.filter((m) => m.role === "tool" && m.content.status === "cancelled");
    expect(notRun).toHaveLength(2);
    for (const message of notRun) expect(message.content.content[0].text).not.toMatch(/partly run/);
    // Never run again: still the five starts.
    expect((await readMarkers(workspace, "d3-seven")).filter((line) => line.startsWith("start"))).toHaveLength(5);
  });

  it("D3: a call interrupted by a worker SIGKILL is never run again; the run is interrupted and the history stays valid", async () => {
    await workers(2);
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [
          { text: "working" },
          { tool: "marker_sleep", args: { marker: "d3", sleepMs: 60_000 } },
          { tool: "noop", args: { marker: "d3-after" } },
        ],
      ]),
    );
    await waitFor(async () => (await readMarkers(workspace, "d3")).length === 1, 20_000, "the tool to start");
    const worker = await leaseHolder(run.body.id);
    worker.kill("SIGKILL");
    expect((await worker.exited).signal).toBe("SIGKILL");

    const done = await client.waitForRun(run.body.id, 30_000);
    expect(done.status).toBe("interrupted");
    expect(done.error.code).toBe("worker_lost");
    expect(await readMarkers(workspace, "d3")).toHaveLength(1);
    expect(await readMarkers(workspace, "d3-after")).toHaveLength(0);

    const calls = await env.query<{ name: string; status: string }>(
      "select name, status from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(calls).toEqual([
      { name: "marker_sleep", status: "interrupted" },
      { name: "noop", status: "cancelled" },
    ]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const interrupted = messages.find((m) => m.role === "tool" && m.content.name === "marker_sleep");
    expect(interrupted.content.isError).toBe(true);
    expect(interrupted.content.content[0].text).toMatch(/outcome is unknown/);

    // A later turn continues from that history.
    const next = await client.startRun(sessionId, script([[{ text: "continuing" }]]));
    expect((await client.waitForRun(next.body.id)).status).toBe("completed");
    expectValidHistory(await client.messages(sessionId));
    // Still exactly once, long after the recovery.
    expect(await readMarkers(workspace, "d3")).toHaveLength(1);
  });

  it("D4: a stalled worker that wakes up cannot commit over newer work (fencing)", async () => {
    // The one running the tool is frozen; the other takes the run over.
    await workers(2);
    // Its metrics say when its job has ended: the fact to wait on, instead of a sleep. Counted from
    // here, once the jobs of earlier tests have ended.
    await env.settled();
    const endedBefore = new Map(await Promise.all(pool.map(async (worker) => [worker, await toolJobsEnded(worker.metricsUrl)] as const)));
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "marker_sleep", args: { marker: "stall", sleepMs: 1500 } }], [{ text: "never" }]]),
    );
    const [marker] = await waitFor(
      async () => {
        const lines = await readMarkers(workspace, "stall");
        return lines.length === 1 && lines;
      },
      20_000,
      "the tool to start",
    );
    // Freeze the worker running the tool: its lease and BullMQ lock lapse while the tool is "still running".
    const stalled = pool.find((worker) => String(worker.process.pid) === marker!.split(" ")[0]);
    const sleeper = leavePool(stalled);
    process.kill(sleeper.pid, "SIGSTOP");
    try {
      const done = await client.waitForRun(run.body.id, 30_000);
      expect(done.status).toBe("interrupted");
    } finally {
      process.kill(sleeper.pid, "SIGCONT");
    }
    // The woken worker finishes its tool and tries to commit the result: it is refused, and its job ends.
    // It takes a fraction of a second; a miss shows what the woken worker logged.
    await waitFor(
      async () => (await toolJobsEnded(stalled!.metricsUrl)) >= endedBefore.get(stalled!)! + 1,
      30_000,
      "the woken job to end",
    ).catch((error: Error) => {
      throw new Error(`${error.message}; the woken worker's log:\n${sleeper.output()}`);
    });
    const [call] = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [run.body.id]);
    expect(call!.status).toBe("interrupted");
    const messages = await client.messages(sessionId);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(messages[2].content.status).toBe("interrupted");
    const events = await client.events(sessionId);
    expect(events.filter((e) => e.type === "tool_end")).toHaveLength(1);
    expect(events.filter((e) => e.type === "run_end")).toHaveLength(1);
    expect(await readMarkers(workspace, "stall")).toHaveLength(1);
    expect((await client.get(`/v1/runs/${run.body.id}`)).body.status).toBe("interrupted");
    // It was taken for dead: the tests after this one use the others.
    sleeper.kill("SIGKILL");
    await sleeper.exited;
  }, 120_000);

  it("X4: a crash between the API's commit and the enqueue does not lose the run", async () => {
    const [crashingApi] = await Promise.all([start("api", { FOYA_FAILPOINTS: "api.after_run_commit" }), workers(1)]);
    const remote = ApiClient.forUrl(crashingApi.url!, client.key);
    const { sessionId } = await client.newSession();
    const attempt = await remote.startRun(sessionId, script([[{ text: "survived" }]])).catch((error: unknown) => error);
    expect(attempt).toBeInstanceOf(Error); // the API died before answering
    expect((await crashingApi.exited).signal).toBe("SIGKILL");

    const [row] = await env.query<{ id: string }>("select id from runs where session_id = $1", [sessionId]);
    expect(row).toBeDefined();
    const done = await client.waitForRun(row!.id, 30_000);
    expect(done.status).toBe("completed");
    // The sweeper found the lost step job and dispatched it once more, under a new id.
    expect((await jobIdsOf(row!.id)).filter((id) => id.startsWith("step-") && id.endsWith("-0-r1"))).toHaveLength(1);
    expect((await jobIdsOf(row!.id)).filter((id) => id.includes("-r2"))).toHaveLength(0);
    const messages = await client.messages(sessionId);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1].content.text).toBe("survived");
  });

  it("X4: the sweeper leaves work alone while its lease is live, however long the tool runs", async () => {
    await workers(1);
    const { sessionId } = await client.newSession();
    // Longer than the lease (2 s) and the sweep grace (1 s): only lease renewals keep it owned.
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "marker_sleep", args: { marker: "long", sleepMs: 4000 } }], [{ text: "ok" }]]),
    );
    const done = await client.waitForRun(run.body.id, 30_000);
    expect(done.status).toBe("completed");
    const ids = await jobIdsOf(run.body.id);
    expect(ids).toContain(`batch-${run.body.id}-0-e1`);
    expect(ids.filter((id) => /-r\d+$/.test(id))).toEqual([]);
    expect(await readMarkers(await env.workspaceOf(sessionId), "long")).toHaveLength(1);
  });

  it("D7: two worker processes share 20 concurrent runs; all complete and each call ran once", async () => {
    await workers(2);
    const sessions = await Promise.all(Array.from({ length: 20 }, () => client.newSession()));
    const runs = await Promise.all(
      sessions.map(({ sessionId }, i) =>
        client.startRun(
          sessionId,
          script([
            [
              { tool: "marker_sleep", args: { marker: `d7-${i}`, sleepMs: 20 } },
              { tool: "noop", args: { marker: `d7-${i}-b` } },
            ],
            [{ tool: "noop", args: { marker: `d7-${i}-c` } }],
            [{ text: "done" }],
          ]),
        ),
      ),
    );
    const finished = await Promise.all(runs.map((run) => client.waitForRun(run.body.id, 60_000)));
    expect(finished.map((run) => run.status)).toEqual(Array(20).fill("completed"));
    const executors = new Set<string>();
    for (const [i, { sessionId }] of sessions.entries()) {
      const workspace = await env.workspaceOf(sessionId);
      for (const marker of [`d7-${i}`, `d7-${i}-b`, `d7-${i}-c`]) {
        const lines = await readMarkers(workspace, marker);
        expect(lines, marker).toHaveLength(1);
        executors.add(lines[0]!.split(" ")[0]!);
      }
      expectValidHistory(await client.messages(sessionId));
    }
    // Only live worker processes executed tools; more than one of them took part.
    expect(executors.size).toBeGreaterThanOrEqual(2);
  });

  it("D4: step and batch jobs delivered twice, and raced by two workers, execute once with no duplicate message or event", async () => {
    // Two worker processes, and an in-process one too.
    await Promise.all([workers(2), env.startWorker()]);
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([[{ text: "a" }, { tool: "marker_sleep", args: { marker: "d4", sleepMs: 300 } }], [{ text: "b" }]]),
    );
    const runId: RunId = run.body.id;
    const { dispatcher } = env.services;
    // Duplicate deliveries of the same work under other job ids, while the originals run.
    for (let copy = 1; copy <= 3; copy++) {
      await dispatcher.stepQueueFor(runId).add("step", { runId, stepIndex: 0 }, { jobId: `dup-step-${runId}-${copy}` });
    }
    await waitFor(async () => (await readMarkers(workspace, "d4")).length === 1, 20_000, "the tool to start");
    for (let copy = 1; copy <= 3; copy++) {
      await dispatcher.toolQueue.add("batch", { runId, stepIndex: 0 }, { jobId: `dup-batch-${runId}-${copy}` });
    }
    // The original ids again: BullMQ refuses them while kept.
    await dispatcher.dispatch([{ runId, tenantId: client.tenantId!, next: { kind: "batch", stepIndex: 0 }, redispatches: 0 }]);
    const done = await client.waitForRun(runId, 30_000);
    expect(done.status).toBe("completed");

    // Redeliveries after completion, of every job the run had.
    for (const next of [
      { kind: "step", stepIndex: 0 },
      { kind: "batch", stepIndex: 0 },
      { kind: "step", stepIndex: 1 },
    ] as const) {
      const job = await (next.kind === "step" ? dispatcher.stepQueueFor(runId) : dispatcher.toolQueue).add(
        next.kind,
        { runId, stepIndex: next.stepIndex },
        {
          jobId: `${jobIdFor(runId, next, 0)}-late`,
        },
      );
      await waitFor(async () => ["completed", "failed"].includes(await job.getState()), 20_000, "the late duplicate to finish");
    }
    const duplicates = await Promise.all(
      [1, 2, 3].flatMap((copy) => [
        dispatcher.stepQueueFor(runId).getJob(`dup-step-${runId}-${copy}`),
        dispatcher.toolQueue.getJob(`dup-batch-${runId}-${copy}`),
      ]),
    );
    for (const job of duplicates)
      await waitFor(async () => !job || ["completed", "failed"].includes(await job.getState()), 20_000, "duplicates to settle");

    expect(await readMarkers(workspace, "d4")).toHaveLength(1);
    const messages = await client.messages(sessionId);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    const events = await client.events(sessionId);
    const count = (type: string) => events.filter((e) => e.type === type).length;
    expect(count("run_start")).toBe(1);
    expect(count("run_end")).toBe(1);
    expect(count("tool_end")).toBe(1);
    expect(count("step_end")).toBe(2);
    // Every step_start was answered by the attempt that committed; superseded attempts, if any, are tagged.
    const stepEnds = events.filter((e) => e.type === "step_end");
    for (const end of stepEnds) {
      const [step] = await env.query<{ attempt: number }>("select attempt from steps where run_id = $1 and index = $2", [
        runId,
        end.data.stepIndex,
      ]);
      expect(end.data.attempt).toBe(step!.attempt);
    }
    const [callRows] = await env.query<{ n: string }>("select count(*)::text as n from tool_calls where run_id = $1", [runId]);
    expect(callRows!.n).toBe("1");
  });
});
