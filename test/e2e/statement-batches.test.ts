import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * Statements in batches (src/store/statement-batches.ts) on a real worker process: tool results and
 * step commits that reach the worker while its statements of that kind are busy wait in its memory
 * for one multi-row statement. A worker killed then loses nothing that was confirmed and runs
 * nothing again (SPEC D3).
 */

let env: TestEnv;
let client: ApiClient;
const processes: FoyaProcess[] = [];

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant();
});
afterAll(async () => {
  await stopWorkers();
  await env?.close();
});

/** Ends the workers of earlier tests, so that the test's own is the only one. */
async function stopWorkers(): Promise<void> {
  const running = processes.splice(0);
  for (const child of running) child.kill("SIGKILL");
  await Promise.all(running.map((child) => child.exited));
}

async function startWorker(): Promise<FoyaProcess> {
  const child = await startFoyaProcess("worker", env.env);
  processes.push(child);
  return child;
}

/**
 * Statements of a kind waiting for a lock the `holder` backend holds: `answer_calls` or
 * `commit_steps`, told apart by a CTE in their first KiB (what pg_stat_activity keeps).
 */
async function blockedBy(holderPid: number, kind: "answers" | "commits"): Promise<number> {
  const [row] = await env.query<{ waiting: number }>(
    `select count(*)::int as waiting from pg_stat_activity
     where datname = current_database() and query like 'with req as (select * from jsonb_to_recordset(%' and query like $2
       and $1 = any(pg_blocking_pids(pid))`,
    [holderPid, kind === "answers" ? "%answered as (%" : "%committed_run as (%"],
  );
  return row?.waiting ?? 0;
}
const answersBlockedBy = (holderPid: number) => blockedBy(holderPid, "answers");

/** A transaction of the test's own that holds sessions' rows, so statements that bump their event counters wait. */
async function holdSessions(sessionIds: readonly string[]): Promise<{ pid: number; release(): Promise<void> }> {
  const holder = new pg.Client({ connectionString: env.env.DATABASE_URL });
  await holder.connect();
  await holder.query("begin");
  await holder.query("select 1 from sessions where id = any($1) for update", [sessionIds]);
  const pid = (await holder.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid as number;
  return {
    pid,
    async release() {
      await holder.query("rollback").catch(() => {});
      await holder.end();
    },
  };
}

describe("statements in batches", () => {
  it("D3: a worker SIGKILLed while its answers wait for a statement (two in flight, held by row locks, four in its memory) loses nothing confirmed and runs nothing again", async () => {
    const worker = await startWorker();
    const sessions = await Promise.all(Array.from({ length: 6 }, () => client.newSession()));
    // The first two tools end first, apart: their answers are the two statements in flight. The other four end while those wait.
    const runs = await Promise.all(
      sessions.map(({ sessionId }, index) =>
        client.startRun(
          sessionId,
          script([[{ tool: "probe", args: { marker: "batched", sleepMs: [800, 1_600][index] ?? 4_000 } }], [{ text: "done" }]]),
        ),
      ),
    );
    const workspaces = await Promise.all(sessions.map(({ sessionId }) => env.workspaceOf(sessionId)));
    const lines = async (index: number) => readMarkers(workspaces[index] as string, "batched");
    await waitFor(
      async () => (await Promise.all([0, 1].map(lines))).every((one) => one.length >= 1),
      20_000,
      "the first two tools to start",
    );

    // Hold the first two sessions' rows: their answer statements wait in Postgres, uncommitted.
    const holder = await holdSessions(sessions.slice(0, 2).map((one) => one.sessionId));
    try {
      await waitFor(
        async () => (await answersBlockedBy(holder.pid)) === 2,
        20_000,
        "the first two answers to wait on their sessions' rows",
      );
      await waitFor(
        async () => (await Promise.all([2, 3, 4, 5].map(lines))).every((one) => one.some((line) => line.startsWith("end "))),
        20_000,
        "the other four tools to end",
      );
      // Their results reach the batcher a moment after the tool's last line (no fact outside the process says when).
      await new Promise((resolve) => setTimeout(resolve, 300));
      const [held] = await env.query<{ running: number }>(
        "select count(*)::int as running from tool_calls where run_id = any($1) and status = 'running'",
        [runs.map((run) => run.body.id)],
      );
      // Nothing was confirmed yet: the two statements wait, the four answers are in the worker's memory.
      expect(held?.running).toBe(6);
      expect(await answersBlockedBy(holder.pid)).toBe(2);
      worker.kill("SIGKILL");
      expect((await worker.exited).signal).toBe("SIGKILL");
    } finally {
      await holder.release();
    }

    await startWorker();
    const ended = await Promise.all(runs.map((run) => client.waitForRun(run.body.id, 60_000)));
    const calls = await env.query<{ run_id: string; status: string }>("select run_id, status from tool_calls where run_id = any($1)", [
      runs.map((run) => run.body.id),
    ]);
    const statusOf = (index: number) => calls.find((call) => call.run_id === runs[index]?.body.id)?.status;
    for (let index = 0; index < 6; index++) {
      // Each tool ran once, whatever became of its answer.
      expect((await lines(index)).filter((line) => line.startsWith("start "))).toHaveLength(1);
      if (index < 2) {
        // A statement whose client died may still commit once the lock is released: then its answer stands.
        expect(["succeeded", "interrupted"]).toContain(statusOf(index));
        expect(ended[index].status).toBe(statusOf(index) === "succeeded" ? "completed" : "interrupted");
      } else {
        // Never stored: the result died with the worker, the call is interrupted and not run again.
        expect(statusOf(index)).toBe("interrupted");
        expect(ended[index].status).toBe("interrupted");
      }
    }
    // One answer per call, and every session's events gap-free.
    for (const [index, { sessionId }] of sessions.entries()) {
      const tool = await env.query("select 1 from messages where run_id = $1 and role = 'tool'", [runs[index]?.body.id]);
      expect(tool).toHaveLength(1);
      const ends = await env.query("select 1 from events where run_id = $1 and type = 'tool_end'", [runs[index]?.body.id]);
      expect(ends).toHaveLength(1);
      const seqs = (await env.query<{ seq: number }>("select seq::int from events where session_id = $1 order by seq", [sessionId])).map(
        (row) => row.seq,
      );
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, at) => at + 1));
    }
  }, 120_000);

  it("D3: a worker SIGKILLed while its step commits wait for a statement (two in flight, held by row locks, four in its memory) loses nothing confirmed and runs no tool twice", async () => {
    await stopWorkers();
    const worker = await startWorker();
    const sessions = await Promise.all(Array.from({ length: 6 }, () => client.newSession()));
    // The first two models answer first, apart: their commits are the two statements in flight. The other four answer while those wait.
    const delays = [3_000, 4_000, 7_000, 7_000, 7_000, 7_000];
    const runs = await Promise.all(
      sessions.map(({ sessionId }, index) =>
        client.startRun(
          sessionId,
          script([[{ delayMs: delays[index] }, { tool: "probe", args: { marker: "committed", sleepMs: 0 } }], [{ text: "done" }]]),
        ),
      ),
    );
    const runIds = runs.map((run) => run.body.id);
    // Every step has written its start (after 20 ms): from now on only the commits touch the sessions' rows.
    await waitFor(
      async () => {
        const [row] = await env.query<{ started: number }>(
          "select count(distinct run_id)::int as started from events where run_id = any($1) and type = 'step_start'",
          [runIds],
        );
        return row?.started === 6;
      },
      20_000,
      "every step to start",
    );
    const holder = await holdSessions(sessions.slice(0, 2).map((one) => one.sessionId));
    try {
      await waitFor(
        async () => (await blockedBy(holder.pid, "commits")) === 2,
        20_000,
        "the first two commits to wait on their sessions' rows",
      );
      // The other four models answer 7 s after their steps started; their commits then wait in the worker's memory (no fact outside it says when).
      const [started] = await env.query<{ last: Date }>(
        "select max(created_at) as last from events where run_id = any($1) and type = 'step_start'",
        [runIds.slice(2)],
      );
      const answeredBy = (started?.last.getTime() ?? Date.now()) + 7_000 + 700;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, answeredBy - Date.now())));
      const [calls] = await env.query<{ count: number }>("select count(*)::int as count from tool_calls where run_id = any($1)", [runIds]);
      // Nothing was confirmed yet: no call exists, the two statements wait.
      expect(calls?.count).toBe(0);
      expect(await blockedBy(holder.pid, "commits")).toBe(2);
      worker.kill("SIGKILL");
      expect((await worker.exited).signal).toBe("SIGKILL");
    } finally {
      await holder.release();
    }

    await startWorker();
    const ended = await Promise.all(runIds.map((runId) => client.waitForRun(runId, 60_000)));
    const workspaces = await Promise.all(sessions.map(({ sessionId }) => env.workspaceOf(sessionId)));
    for (const [index, { sessionId }] of sessions.entries()) {
      const runId = runIds[index];
      // A step whose commit died with the worker is asked again; a committed one is not: either way one answer per step.
      expect(ended[index].status).toBe("completed");
      const assistant = await env.query<{ step_index: number }>(
        "select step_index from messages where run_id = $1 and role = 'assistant' order by step_index",
        [runId],
      );
      expect(assistant.map((row) => row.step_index)).toEqual([0, 1]);
      const calls = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [runId]);
      expect(calls).toEqual([{ status: "succeeded" }]);
      // The tool ran once.
      const lines = await readMarkers(workspaces[index] as string, "committed");
      expect(lines.filter((line) => line.startsWith("start "))).toHaveLength(1);
      const seqs = (await env.query<{ seq: number }>("select seq::int from events where session_id = $1 order by seq", [sessionId])).map(
        (row) => row.seq,
      );
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, at) => at + 1));
    }
  }, 120_000);
});
