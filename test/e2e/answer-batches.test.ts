import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * Answers in batches (src/store/answer-batches.ts) on a real worker process: results that reach
 * the worker while its answer statements are busy wait in its memory for one multi-row statement.
 * A worker killed then loses nothing that was confirmed and runs nothing again (SPEC D3).
 */

let env: TestEnv;
let client: ApiClient;
const processes: FoyaProcess[] = [];

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant();
});
afterAll(async () => {
  for (const child of processes) child.kill("SIGKILL");
  await Promise.all(processes.map((child) => child.exited));
  await env?.close();
});

async function startWorker(): Promise<FoyaProcess> {
  const child = await startFoyaProcess("worker", env.env);
  processes.push(child);
  return child;
}

/** Answer statements (`answer_calls`, whose text begins so; pg_stat_activity keeps its first KiB) waiting for a lock the `holder` backend holds. */
async function answersBlockedBy(holderPid: number): Promise<number> {
  const [row] = await env.query<{ waiting: number }>(
    `select count(*)::int as waiting from pg_stat_activity
     where datname = current_database() and query like 'with req as (select * from jsonb_to_recordset(%' and $1 = any(pg_blocking_pids(pid))`,
    [holderPid],
  );
  return row?.waiting ?? 0;
}

describe("answers in batches", () => {
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
    const holder = new pg.Client({ connectionString: env.env.DATABASE_URL });
    await holder.connect();
    try {
      await holder.query("begin");
      await holder.query("select 1 from sessions where id = any($1) for update", [sessions.slice(0, 2).map((one) => one.sessionId)]);
      const holderPid = (await holder.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid as number;
      await waitFor(async () => (await answersBlockedBy(holderPid)) === 2, 20_000, "the first two answers to wait on their sessions' rows");
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
      expect(await answersBlockedBy(holderPid)).toBe(2);
      worker.kill("SIGKILL");
      expect((await worker.exited).signal).toBe("SIGKILL");
      await holder.query("rollback");
    } finally {
      await holder.end();
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
});
