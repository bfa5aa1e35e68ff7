import { performance } from "node:perf_hooks";
import path from "node:path";
import pg from "pg";
import { openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { cpuPerStep, measureCpu } from "./support/cpu-split.js";
import { repoRoot } from "./support/processes.js";
import { writeBenchResult } from "./support/in-process-api.js";
import { createScratchDatabase } from "./support/scratch-database.js";
import { distribution, round } from "./support/stats.js";

/**
 * What micro-batching a hot statement across jobs would save, measured before building it
 * (docs/performance.md, "Micro-batching, measured"): the shape of a tool result's commit
 * (the call's fenced status change, its tool message, the session's sequence bump with one
 * event, the run's fenced hand-off) on the real schema, driven by 64 concurrent runs as one
 * worker process would, once as one statement per result (today's store) and once through a
 * batcher that sends every result waiting at the moment a connection frees up as one
 * multi-row statement, each row with its own fences. Prints results/s, latency, and Postgres
 * and client CPU per result for each.
 */

const sessions = Number(process.env.PROBE_SESSIONS ?? 64);
const windowMs = Number(process.env.PROBE_WINDOW_MS ?? 3000);
/** Each run's time between two results (uniform over 0 to twice this), the rest of its step: 0 is a closed loop. */
const thinkMs = Number(process.env.PROBE_THINK_MS ?? 0);
const callsPerSession = 6000;

const rowsText = `
  req as (
    select * from unnest(:calls::text[], :sessions::text[], :runs::text[], :fences::int8[], :runFences::int8[])
      with ordinality as r(call_id, session_id, run_id, exec_fence, run_fence, ord)
  )`;

/** One statement for any number of results; with one row it is today's statement in all but its parameters' form. */
const answerText = `with ${rowsText},
  answered as (
    update tool_calls c set status = 'succeeded', result = '{"text":"ok"}'::jsonb, is_error = false, ended_at = now()
    from req r where c.id = r.call_id and c.status = 'running' and c.exec_fence = r.exec_fence
    returning r.ord
  ),
  tool_message as (
    insert into messages (id, tenant_id, session_id, run_id, run_ordinal, step_index, part, call_index, role, content)
    select 'm' || r.call_id, 'ten_p', r.session_id, r.run_id, 1, 0, 2, 0, 'tool', '{"role":"tool","content":"ok"}'::jsonb
    from req r join answered a using (ord)
    on conflict do nothing
  ),
  handed_off as (
    update runs u set step_index = u.step_index + 1, updated_at = now()
    from req r join answered a using (ord)
    where u.id = r.run_id and u.fence = r.run_fence and u.status = 'running'
    returning r.ord
  ),
  bump as (
    update sessions s set event_seq = s.event_seq + 1
    from req r join answered a using (ord)
    where s.id = r.session_id
    returning s.id, s.event_seq, r.run_id
  ),
  appended as (
    insert into events (session_id, seq, tenant_id, run_id, step_index, attempt, type, data)
    select b.id, b.event_seq, 'ten_p', b.run_id, 0, 1, 'tool_end', '{"status":"succeeded"}'::jsonb from bump b
  )
  select (select count(*) from answered)::int as answered, (select count(*) from handed_off)::int as handed_off`;

function positional(text: string): string {
  const names = ["calls", "sessions", "runs", "fences", "runFences"];
  return names.reduce((sql, name, index) => sql.replaceAll(`:${name}`, `$${index + 1}`), text);
}

interface Result {
  callId: string;
  sessionId: string;
  runId: string;
}

type Send = (results: readonly Result[]) => Promise<void>;

/** Today's store: each result its own statement on a pooled connection. */
function oneByOne(pool: pg.Pool): (result: Result) => Promise<void> {
  const send = statementSender(pool, "probe_answer_one");
  return (result) => send([result]);
}

function statementSender(pool: pg.Pool, name: string): Send {
  const text = positional(answerText);
  return async (results) => {
    const { rows } = await pool.query({
      name,
      text,
      values: [
        results.map((r) => r.callId),
        results.map((r) => r.sessionId),
        results.map((r) => r.runId),
        results.map(() => 1),
        results.map(() => 1),
      ],
    });
    if (rows[0].answered !== results.length) throw new Error(`answered ${rows[0].answered} of ${results.length}`);
  };
}

/**
 * Natural batching: at most `inFlight` statements at once; what arrives meanwhile waits and
 * goes as one statement when one of them ends (no timer: an idle batcher sends at once).
 */
function batched(pool: pg.Pool, inFlight: number, sizes: number[]): (result: Result) => Promise<void> {
  const send = statementSender(pool, `probe_answer_batch_${inFlight}`);
  let waiting: { result: Result; done: () => void; failed: (error: unknown) => void }[] = [];
  let running = 0;
  const pump = () => {
    while (running < inFlight && waiting.length > 0) {
      const batch = waiting;
      waiting = [];
      running++;
      sizes.push(batch.length);
      send(batch.map((entry) => entry.result))
        .then(
          () => {
            for (const entry of batch) entry.done();
          },
          (error) => {
            for (const entry of batch) entry.failed(error);
          },
        )
        .finally(() => {
          running--;
          pump();
        });
    }
  };
  return (result) =>
    new Promise<void>((done, failed) => {
      waiting.push({ result, done, failed });
      if (waiting.length === 1) queueMicrotask(pump);
    });
}

async function seed(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`insert into tenants (id, name) values ('ten_p', 'probe')`);
    await client.query(`insert into projects (id, tenant_id, name, workspace_path) values ('prj_p', 'ten_p', 'probe', '/nowhere')`);
    await client.query(
      `insert into sessions (id, tenant_id, project_id, approval_mode, provider_profile, run_mode)
       select 'ses_' || s, 'ten_p', 'prj_p', 'auto', 'scripted', 'single' from generate_series(1, $1) s`,
      [sessions],
    );
    await client.query(
      `insert into runs (id, tenant_id, session_id, status, input, fence)
       select 'run_' || s, 'ten_p', 'ses_' || s, 'running', 'go', 1 from generate_series(1, $1) s`,
      [sessions],
    );
    await client.query(
      `insert into tool_calls (id, tenant_id, session_id, run_id, step_id, step_index, call_index, call_id, name, arguments_raw, status, exec_fence)
       select 'call_' || s || '_' || n, 'ten_p', 'ses_' || s, 'run_' || s, 'step_' || s || '_' || n, n, 0, 'c', 'noop', '{}', 'running', 1
       from generate_series(1, $1) s, generate_series(1, $2) n`,
      [sessions, callsPerSession],
    );
    await client.query("vacuum analyze");
  } finally {
    await client.end();
  }
}

interface Window {
  mode: string;
  results: number;
  perSecond: number;
  latencyMs: { p50: number; p99: number };
  meanBatch: number;
  postgresMsPerResult: number;
  clientMsPerResult: number;
  machineMsPerResult: number;
}

/** `sessions` runs, each committing its results one after another for `windowMs`. */
async function drive(mode: string, answer: (result: Result) => Promise<void>, next: number[], sizes: number[]): Promise<Window> {
  const latencies: number[] = [];
  let stop = false;
  const started = performance.now();
  const { value: results, cpu } = await measureCpu([], async () => {
    const timer = setTimeout(() => {
      stop = true;
    }, windowMs);
    const counts = await Promise.all(
      Array.from({ length: sessions }, async (_, index) => {
        let done = 0;
        while (!stop) {
          const n = (next[index] ?? 0) + 1;
          next[index] = n;
          if (n > callsPerSession) throw new Error("the probe ran out of seeded calls");
          const at = performance.now();
          await answer({ callId: `call_${index + 1}_${n}`, sessionId: `ses_${index + 1}`, runId: `run_${index + 1}` });
          latencies.push(performance.now() - at);
          done++;
          if (thinkMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * thinkMs));
        }
        return done;
      }),
    );
    clearTimeout(timer);
    return counts.reduce((sum, count) => sum + count, 0);
  });
  const seconds = (performance.now() - started) / 1000;
  const split = cpuPerStep([{ steps: results, cpu }]);
  const latency = distribution(latencies);
  return {
    mode,
    results,
    perSecond: round(results / seconds),
    latencyMs: { p50: round(latency.p50), p99: round(latency.p99) },
    meanBatch: sizes.length > 0 ? round(sizes.reduce((a, b) => a + b, 0) / sizes.length) : 1,
    postgresMsPerResult: round(split?.postgresMs ?? Number.NaN),
    clientMsPerResult: round(split?.benchMs ?? Number.NaN),
    machineMsPerResult: round(split?.machineMs ?? Number.NaN),
  };
}

async function main(): Promise<void> {
  const database = await createScratchDatabase("foya_probe");
  try {
    const handle = openDatabase(database.url, { max: 2 });
    await runMigrations(handle, path.join(repoRoot, "drizzle"));
    await handle.pool.end();
    await seed(database.url);
    // The worker's pool size (src/db/client.ts): today's statements may all run at once.
    const pool = new pg.Pool({ connectionString: database.url, max: 20 });
    // The scratch database is dropped with force at the end, whatever happened.
    pool.on("error", () => {});
    const next: number[] = [];
    const modes: [string, () => { answer: (result: Result) => Promise<void>; sizes: number[] }][] = [
      ["one statement per result", () => ({ answer: oneByOne(pool), sizes: [] })],
      [
        "batched, 1 in flight",
        () => {
          const sizes: number[] = [];
          return { answer: batched(pool, 1, sizes), sizes };
        },
      ],
      [
        "batched, 2 in flight",
        () => {
          const sizes: number[] = [];
          return { answer: batched(pool, 2, sizes), sizes };
        },
      ],
      [
        "batched, 4 in flight",
        () => {
          const sizes: number[] = [];
          return { answer: batched(pool, 4, sizes), sizes };
        },
      ],
    ];
    // A warm-up of each, then rounds in A B C D D C B A order.
    for (const [, make] of modes) {
      const { answer, sizes } = make();
      console.log(JSON.stringify(await drive("warm-up", answer, next, sizes)));
    }
    const windows: Window[] = [];
    for (const [mode, make] of [...modes, ...[...modes].reverse()]) {
      const { answer, sizes } = make();
      const window = await drive(mode, answer, next, sizes);
      console.log(JSON.stringify(window));
      windows.push(window);
    }
    await pool.end();
    const byMode = modes.map(([mode]) => {
      const of = windows.filter((window) => window.mode === mode);
      const mean = (key: keyof Omit<Window, "mode" | "latencyMs">) =>
        round(of.reduce((sum, window) => sum + (window[key] as number), 0) / of.length);
      return {
        mode,
        perSecond: mean("perSecond"),
        meanBatch: mean("meanBatch"),
        p50Ms: round(of.reduce((sum, window) => sum + window.latencyMs.p50, 0) / of.length),
        p99Ms: round(of.reduce((sum, window) => sum + window.latencyMs.p99, 0) / of.length),
        postgresMsPerResult: mean("postgresMsPerResult"),
        clientMsPerResult: mean("clientMsPerResult"),
        machineMsPerResult: mean("machineMsPerResult"),
      };
    });
    console.table(byMode);
    writeBenchResult("batching-probe", { sessions, windowMs, thinkMs, windows, byMode });
  } finally {
    await database.drop();
  }
}

await main();
