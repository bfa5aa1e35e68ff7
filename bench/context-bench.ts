/**
 * Context compiler and storage amplification benchmark.
 *
 *   npx tsx bench/context-bench.ts
 *
 * 1. Context build time: a synthetic 1,000-message history (10 runs of a user
 *    message, 49 assistant+tool steps and a closing answer; 50 of the 490 tool
 *    results between 200 KiB and 2 MiB, the rest small) inserted as real rows,
 *    then `loadHistory` (Postgres) and `compileMessages` (non-vision, projection
 *    limit for a 128k context window), p50/p99 over repetitions, against the
 *    naive baseline of `JSON.stringify` of the whole history. Determinism: two
 *    compilations from two loads must be byte-identical.
 * 2. Bytes written to Postgres per byte of tool output: real agent turns (API +
 *    in-process worker, scripted provider, the `big_output` tool of
 *    bench/support/big-output-tools.ts), 20 calls of 1 MiB, compressible and
 *    incompressible. WAL is read with pg_walinspect and attributed to this
 *    benchmark's database and to tables (other databases on the same server do
 *    not count); pg_stat_wal's cluster-wide `wal_bytes` delta and the growth of
 *    `pg_total_relation_size` are reported too.
 * 3. No per-step rewrite of history: one run of 1 MiB result then 30 small
 *    calls; WAL per step (between consecutive tool-call starts) must not grow
 *    with the history.
 *
 * Setup: a fresh database foya_bench_<random>, random queue prefix, temporary
 * workspace; all removed at the end. Results: stdout and bench/results/context.json.
 * Knobs (env, optional): BENCH_CONTEXT_REPS (30), BENCH_BIG_CALLS (20),
 * BENCH_BIG_BYTES (1048576), BENCH_SMALL_STEPS (30).
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { createApp } from "../src/api/app.js";
import type { App } from "../src/api/app-env.js";
import { loadConfig } from "../src/config.js";
import { compileMessages } from "../src/context/compile-request.js";
import { projectionLimit } from "../src/context/project-results.js";
import type { HistoryMessage, MessagePosition } from "../src/core/history.js";
import type { ProjectId, SessionId, TenantId } from "../src/ids.js";
import { createServices, type Services } from "../src/services.js";
import { startWorkerRuntime, type WorkerRuntime } from "../src/worker/worker-runtime.js";
import { createBenchEnv, type BenchEnv } from "./support/bench-env.js";
import { callHookKey, logText, randomText, type CallHook } from "./support/big-output-tools.js";
import { envInt } from "./support/env-int.js";
import { sqlPool } from "./support/sql-pool.js";
import { distribution, mean, ratio, round, roundDistribution } from "./support/stats.js";

const settings = {
  reps: envInt("BENCH_CONTEXT_REPS", 30, 1000),
  bigCalls: envInt("BENCH_BIG_CALLS", 20, 200),
  bigBytes: envInt("BENCH_BIG_BYTES", 1024 * 1024, 16 * 1024 * 1024),
  smallSteps: envInt("BENCH_SMALL_STEPS", 30, 200),
  smallBytes: 200,
  contextWindow: 128_000,
  runTimeoutMs: 180_000,
};
const aims = { bytesPerOutputByteMax: 1.2 };
const trackedTables = ["messages", "tool_calls", "events", "steps", "content_blobs", "runs", "artifacts"];
const KiB = 1024;
const MiB = 1024 * 1024;

// ---------------------------------------------------------------------------
// API helpers (in-process app.request)

interface ApiResponse<T> {
  status: number;
  body: T;
}

async function call<T>(app: App, key: string, method: string, route: string, body?: unknown): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await app.request(route, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
}

function expectStatus<T>(response: ApiResponse<T>, status: number, what: string): T {
  if (response.status !== status) throw new Error(`${what} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

interface Tenant {
  key: string;
  tenantId: TenantId;
  projectId: ProjectId;
}

async function newTenant(app: App, adminToken: string, pool: pg.Pool): Promise<Tenant> {
  const tenant = expectStatus(
    await call<{ apiKey: string }>(app, adminToken, "POST", "/v1/tenants", { name: "context-bench" }),
    201,
    "tenant creation",
  );
  const project = expectStatus(
    await call<{ id: ProjectId }>(app, tenant.apiKey, "POST", "/v1/projects", { name: "context-bench" }),
    201,
    "project creation",
  );
  const { rows } = await pool.query<{ tenant_id: TenantId }>("select tenant_id from projects where id = $1", [project.id]);
  return { key: tenant.apiKey, tenantId: rows[0]!.tenant_id, projectId: project.id };
}

async function newSession(app: App, tenant: Tenant): Promise<SessionId> {
  return expectStatus(
    await call<{ id: SessionId }>(app, tenant.key, "POST", "/v1/sessions", { projectId: tenant.projectId }),
    201,
    "session creation",
  ).id;
}

async function runScript(app: App, tenant: Tenant, sessionId: string, steps: unknown[][]): Promise<{ runId: string; status: string }> {
  const input = JSON.stringify({ script: steps });
  const run = expectStatus(
    await call<{ id: string }>(app, tenant.key, "POST", `/v1/sessions/${sessionId}/runs`, { input }),
    202,
    "run start",
  );
  const deadline = Date.now() + settings.runTimeoutMs;
  for (;;) {
    const state = await call<{ status: string; error?: unknown }>(app, tenant.key, "GET", `/v1/runs/${run.id}`);
    if (["completed", "failed", "cancelled", "interrupted"].includes(state.body.status)) {
      if (state.body.status !== "completed") throw new Error(`run ${run.id} ended ${state.body.status}: ${JSON.stringify(state.body)}`);
      return { runId: run.id, status: state.body.status };
    }
    if (Date.now() > deadline) throw new Error(`run ${run.id} still ${state.body.status} after ${settings.runTimeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// ---------------------------------------------------------------------------
// Part 1: context build

interface SyntheticHistory {
  rows: Array<{ position: MessagePosition; message: HistoryMessage }>;
  largeResults: number;
  largeBytes: number;
  smallResults: number;
}

/** 10 runs × (user + 49 × (assistant with one call + its result) + closing answer) = 1,000 messages. */
function syntheticHistory(): SyntheticHistory {
  const rows: SyntheticHistory["rows"] = [];
  const runsCount = 10;
  const stepsPerRun = 49;
  let toolIndex = 0;
  let largeResults = 0;
  let largeBytes = 0;
  let smallResults = 0;
  for (let run = 1; run <= runsCount; run++) {
    rows.push({
      position: { runOrdinal: run, stepIndex: -1, part: 0, callIndex: 0 },
      message: { role: "user", text: `Task ${run}: look into the service logs and summarize what failed, with counts per endpoint.` },
    });
    for (let step = 0; step < stepsPerRun; step++) {
      const callId = `call_${run}_${step}_0`;
      // Exactly 50 of the 490 results are large, spread evenly over the history.
      const large = Math.floor(((toolIndex + 1) * 50) / 490) > Math.floor((toolIndex * 50) / 490);
      const name = large ? "read_logs" : "lookup";
      rows.push({
        position: { runOrdinal: run, stepIndex: step, part: 1, callIndex: 0 },
        message: {
          role: "assistant",
          text: step % 3 === 0 ? `Step ${step}: checking the next source.` : "",
          toolCalls: [
            {
              callId,
              name,
              argumentsRaw: JSON.stringify(large ? { file: `logs/service-${toolIndex}.log` } : { key: `item-${toolIndex}` }),
            },
          ],
        },
      });
      let text: string;
      if (large) {
        // 200 KiB .. 2 MiB, spread evenly; half log-like text, half base64 blobs.
        const bytes = Math.round(200 * KiB + (largeResults * (2 * MiB - 200 * KiB)) / 49);
        text = largeResults % 2 === 0 ? logText(bytes, toolIndex + 1) : randomText(bytes, toolIndex + 1);
        largeResults++;
        largeBytes += bytes;
      } else {
        text = logText(200 + ((toolIndex * 97) % 1800), toolIndex + 1);
        smallResults++;
      }
      rows.push({
        position: { runOrdinal: run, stepIndex: step, part: 2, callIndex: 0 },
        message: { role: "tool", callId, name, status: "succeeded", isError: false, content: [{ type: "text", text }] },
      });
      toolIndex++;
    }
    rows.push({
      position: { runOrdinal: run, stepIndex: stepsPerRun, part: 1, callIndex: 0 },
      message: { role: "assistant", text: `Run ${run} done: 3 endpoints failed.`, toolCalls: [] },
    });
  }
  return { rows, largeResults, largeBytes, smallResults };
}

async function insertHistory(pool: pg.Pool, tenantId: TenantId, sessionId: SessionId, history: SyntheticHistory): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    for (let run = 1; run <= 10; run++) {
      await client.query("insert into runs (id, tenant_id, session_id, ordinal, status, input) values ($1, $2, $3, $4, 'completed', $5)", [
        `run_ctxbench_${run}`,
        tenantId,
        sessionId,
        run,
        "synthetic",
      ]);
    }
    let index = 0;
    for (const { position, message } of history.rows) {
      await client.query(
        `insert into messages (id, tenant_id, session_id, run_id, run_ordinal, step_index, part, call_index, role, content)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)`,
        [
          `msg_ctxbench_${index++}`,
          tenantId,
          sessionId,
          `run_ctxbench_${position.runOrdinal}`,
          position.runOrdinal,
          position.stepIndex,
          position.part,
          position.callIndex,
          message.role,
          JSON.stringify(message),
        ],
      );
    }
    await client.query("commit");
  } catch (error) {
    await client.query("rollback").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
  await pool.query("analyze messages");
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

async function contextBuild(services: Services, tenant: Tenant, app: App) {
  const sessionId = await newSession(app, tenant);
  const history = syntheticHistory();
  const insertStart = performance.now();
  await insertHistory(sqlPool(services.config), tenant.tenantId, sessionId, history);
  const insertMs = performance.now() - insertStart;
  const resultLimit = projectionLimit(settings.contextWindow);
  const context = {
    imageInput: false,
    artifacts: services.store.artifacts.artifactReader({ tenantId: tenant.tenantId, sessionId }),
    resultLimit,
  };
  const { messages } = services.store;

  // Warm-up (JIT, pool connections).
  for (let i = 0; i < 3; i++) await compileMessages(await messages.loadHistory(tenant.tenantId, sessionId, 10), context);

  const loadMs: number[] = [];
  const compileMs: number[] = [];
  const compileSerializeMs: number[] = [];
  const naiveSerializeMs: number[] = [];
  let compiledBytes = 0;
  let naiveBytes = 0;
  let messageCount = 0;
  const digests = new Set<string>();
  for (let rep = 0; rep < settings.reps; rep++) {
    let start = performance.now();
    const entries = await messages.loadHistory(tenant.tenantId, sessionId, 10);
    loadMs.push(performance.now() - start);
    messageCount = entries.length;

    start = performance.now();
    const compiled = await compileMessages(entries, context);
    compileMs.push(performance.now() - start);
    start = performance.now();
    const compiledJson = JSON.stringify(compiled);
    compileSerializeMs.push(performance.now() - start + (compileMs.at(-1) as number));
    compiledBytes = Buffer.byteLength(compiledJson);
    digests.add(sha256(compiledJson));

    // Baseline: the naive request that sends the whole history as stored.
    start = performance.now();
    const naiveJson = JSON.stringify(entries.map((entry) => entry.message));
    naiveSerializeMs.push(performance.now() - start);
    naiveBytes = Buffer.byteLength(naiveJson);
  }
  // Determinism, explicitly: two independent loads, two compilations, byte comparison.
  const first = JSON.stringify(await compileMessages(await messages.loadHistory(tenant.tenantId, sessionId, 10), context));
  const second = JSON.stringify(await compileMessages(await messages.loadHistory(tenant.tenantId, sessionId, 10), context));
  const deterministic = first === second && digests.size === 1 && digests.has(sha256(first));

  const { rows: sizeRows } = await sqlPool(services.config).query<{ stored: string; text: string }>(
    "select sum(pg_column_size(content))::bigint as stored, sum(octet_length(content::text))::bigint as text from messages where session_id = $1",
    [sessionId],
  );
  const load = distribution(loadMs);
  const compile = distribution(compileMs);
  return {
    messages: messageCount,
    largeResults: history.largeResults,
    largeResultBytes: history.largeBytes,
    smallResults: history.smallResults,
    historyJsonBytes: naiveBytes,
    historyStoredBytes: Number(sizeRows[0]?.stored ?? 0),
    historyJsonbTextBytes: Number(sizeRows[0]?.text ?? 0),
    insertMs: round(insertMs),
    resultLimitChars: resultLimit,
    loadMs: roundDistribution(load),
    compileMs: roundDistribution(compile),
    compileAndSerializeMs: roundDistribution(distribution(compileSerializeMs)),
    naiveSerializeMs: roundDistribution(distribution(naiveSerializeMs)),
    compiledRequestBytes: compiledBytes,
    compiledToHistoryRatio: round(ratio(compiledBytes, naiveBytes) * 10_000) / 10_000,
    naiveToCompiledFactor: round(ratio(naiveBytes, compiledBytes)),
    deterministic,
    compiledSha256: sha256(first),
  };
}

// ---------------------------------------------------------------------------
// WAL and relation-size measurement

interface WalTable {
  records: number;
  bytes: number;
  fpiBytes: number;
}

interface WalSlice {
  /** WAL records of this database (block references into it, or the same transaction ids). */
  bytes: number;
  fpiBytes: number;
  records: number;
  byTable: Record<string, WalTable>;
}

class WalProbe {
  private constructor(
    private readonly pool: pg.Pool,
    private readonly dbOid: string,
    private readonly slotHolder: pg.PoolClient,
  ) {}

  /**
   * Checkpoints recycle WAL segments quickly on a busy server, so the probe holds a
   * temporary physical replication slot (reserving WAL from now on) on a dedicated
   * connection; Postgres drops it when that connection ends, so it cannot be left behind.
   */
  static async create(pool: pg.Pool, slotName: string): Promise<WalProbe> {
    await pool.query("create extension if not exists pg_walinspect");
    const { rows } = await pool.query<{ oid: string }>("select oid::text from pg_database where datname = current_database()");
    const holder = await pool.connect();
    await holder.query("select pg_create_physical_replication_slot($1, true, true)", [slotName]);
    return new WalProbe(pool, rows[0]!.oid, holder);
  }

  /** Drops the slot (by ending its connection). */
  close(): void {
    this.slotHolder.release(true);
  }

  async insertLsn(): Promise<string> {
    return (await this.pool.query<{ lsn: string }>("select pg_current_wal_insert_lsn()::text as lsn")).rows[0]!.lsn;
  }

  async clusterWalBytes(): Promise<number> {
    return Number((await this.pool.query<{ b: string }>("select wal_bytes::text as b from pg_stat_wal")).rows[0]!.b);
  }

  async relationSizes(): Promise<Record<string, number>> {
    const { rows } = await this.pool.query<{ relname: string; size: string }>(
      "select relname, pg_total_relation_size(oid)::text as size from pg_class where relnamespace = 'public'::regnamespace and relkind = 'r' and relname = any($1)",
      [trackedTables],
    );
    return Object.fromEntries(rows.map((row) => [row.relname, Number(row.size)]));
  }

  /** relfilenode → owning table, for tables, their TOAST tables and all their indexes. */
  private async owners(): Promise<Map<string, string>> {
    const { rows } = await this.pool.query<{ node: string; owner: string }>(`
      select c.relfilenode::text as node, t.relname as owner
      from pg_class t
      join pg_class c on c.oid = t.oid or c.oid = t.reltoastrelid
        or c.oid in (select indexrelid from pg_index where indrelid = t.oid or (t.reltoastrelid <> 0 and indrelid = t.reltoastrelid))
      where t.relkind = 'r' and t.relnamespace = 'public'::regnamespace and c.relfilenode <> 0`);
    return new Map(rows.map((row) => [row.node, row.owner]));
  }

  /** This database's WAL between two positions, by table. */
  async slice(from: string, to: string): Promise<WalSlice> {
    const { rows } = await this.pool.query<{ node: string | null; records: number; bytes: string; fpi: string }>(
      `with r as (
         select xid, record_length, fpi_length, substring(block_ref from $3) as node
         from pg_get_wal_records_info($1::pg_lsn, least($2::pg_lsn, pg_current_wal_flush_lsn()))
       ),
       x as (select distinct xid from r where node is not null and xid <> '0'::xid)
       select node, count(*)::int as records, sum(record_length)::text as bytes, sum(fpi_length)::text as fpi
       from r where node is not null or xid in (select xid from x)
       group by node`,
      [from, to, `rel \\d+/${this.dbOid}/(\\d+)`],
    );
    const owners = await this.owners();
    const byTable: Record<string, WalTable> = {};
    let bytes = 0;
    let fpiBytes = 0;
    let records = 0;
    for (const row of rows) {
      const owner = row.node === null ? "(commit/other records)" : (owners.get(row.node) ?? "(catalog/other)");
      byTable[owner] ??= { records: 0, bytes: 0, fpiBytes: 0 };
      const entry = byTable[owner];
      entry.records += row.records;
      entry.bytes += Number(row.bytes);
      entry.fpiBytes += Number(row.fpi);
      bytes += Number(row.bytes);
      fpiBytes += Number(row.fpi);
      records += row.records;
    }
    return { bytes, fpiBytes, records, byTable };
  }
}

// ---------------------------------------------------------------------------
// Part 2: bytes written per byte of tool output

async function amplification(services: Services, app: App, tenant: Tenant, wal: WalProbe, kind: "random" | "text") {
  const sessionId = await newSession(app, tenant);
  const steps: unknown[][] = Array.from({ length: settings.bigCalls }, (_, i) => [
    { tool: "big_output", args: { bytes: settings.bigBytes, kind, seed: 1000 + i } },
  ]);
  steps.push([{ text: "done" }]);
  const sizesBefore = await wal.relationSizes();
  const clusterBefore = await wal.clusterWalBytes();
  const lsnBefore = await wal.insertLsn();
  const started = performance.now();
  await runScript(app, tenant, sessionId, steps);
  const elapsedMs = performance.now() - started;
  const lsnAfter = await wal.insertLsn();
  const clusterAfter = await wal.clusterWalBytes();
  const sizesAfter = await wal.relationSizes();
  const slice = await wal.slice(lsnBefore, lsnAfter);
  const outputBytes = settings.bigCalls * settings.bigBytes;
  const growth = Object.fromEntries(trackedTables.map((table) => [table, (sizesAfter[table] ?? 0) - (sizesBefore[table] ?? 0)]));
  const growthTotal = Object.values(growth).reduce((a, b) => a + b, 0);
  const { rows: stored } = await sqlPool(services.config).query<{ table: string; stored: string }>(
    `select 'tool_calls' as table, sum(pg_column_size(result))::text as stored from tool_calls where session_id = $1
     union all select 'messages', sum(pg_column_size(content))::text from messages where session_id = $1 and role = 'tool'
     union all select 'events', sum(pg_column_size(data))::text from events where session_id = $1`,
    [sessionId],
  );
  return {
    kind,
    calls: settings.bigCalls,
    bytesPerCall: settings.bigBytes,
    toolOutputBytes: outputBytes,
    elapsedMs: round(elapsedMs),
    walBytesThisDatabase: slice.bytes,
    walFpiBytesThisDatabase: slice.fpiBytes,
    walPerOutputByte: Number(ratio(slice.bytes, outputBytes).toFixed(4)),
    walByTable: Object.fromEntries(
      Object.entries(slice.byTable)
        .sort((a, b) => b[1].bytes - a[1].bytes)
        .map(([table, entry]) => [table, { ...entry, perOutputByte: Number(ratio(entry.bytes, outputBytes).toFixed(4)) }]),
    ),
    clusterWalBytes: clusterAfter - clusterBefore,
    clusterWalPerOutputByte: Number(ratio(clusterAfter - clusterBefore, outputBytes).toFixed(4)),
    relationGrowthBytes: growth,
    relationGrowthTotal: growthTotal,
    relationGrowthPerOutputByte: Number(ratio(growthTotal, outputBytes).toFixed(4)),
    storedColumnBytes: Object.fromEntries(stored.map((row) => [row.table, Number(row.stored ?? 0)])),
  };
}

// ---------------------------------------------------------------------------
// Part 3: WAL per step does not grow with history

async function perStep(app: App, tenant: Tenant, wal: WalProbe) {
  const sessionId = await newSession(app, tenant);
  const steps: unknown[][] = [[{ tool: "big_output", args: { bytes: settings.bigBytes, kind: "random", seed: 7 } }]];
  for (let i = 0; i < settings.smallSteps; i++)
    steps.push([{ tool: "big_output", args: { bytes: settings.smallBytes, kind: "text", seed: 100 + i } }]);
  steps.push([{ text: "done" }]);
  const marks: string[] = [];
  const hook: CallHook = async () => {
    marks.push(await wal.insertLsn());
  };
  (globalThis as Record<symbol, unknown>)[callHookKey] = hook;
  try {
    marks.push(await wal.insertLsn());
    await runScript(app, tenant, sessionId, steps);
    marks.push(await wal.insertLsn());
  } finally {
    delete (globalThis as Record<symbol, unknown>)[callHookKey];
  }
  if (marks.length !== steps.length + 1) throw new Error(`expected ${steps.length + 1} WAL marks, got ${marks.length}`);
  // marks[0] run start, marks[1..n] start of each tool call, marks[n+1] run end.
  // Interval i (i = 1..n) = from call i-1's start to the next call's start: the call's result commit,
  // the next step's claim, model stream, assistant message and next tool call.
  // Full-page images depend on when the server last checkpointed, not on the step: the comparison uses WAL without them.
  const perStepBytes: number[] = [];
  const perStepFpi: number[] = [];
  const perStepTables: Array<Record<string, number>> = [];
  for (let i = 1; i < marks.length - 1; i++) {
    const slice = await wal.slice(marks[i] as string, marks[i + 1] as string);
    perStepBytes.push(slice.bytes - slice.fpiBytes);
    perStepFpi.push(slice.fpiBytes);
    perStepTables.push(Object.fromEntries(Object.entries(slice.byTable).map(([table, entry]) => [table, entry.bytes])));
  }
  const startSlice = await wal.slice(marks[0] as string, marks[1] as string);
  const small = perStepBytes.slice(1, -1); // steps after the big result, before the closing step
  const xs = small.map((_, i) => i + 1);
  const slope = linearSlope(xs, small);
  const head = small.slice(0, 5);
  const tail = small.slice(-5);
  return {
    steps: steps.length,
    bigResultBytes: settings.bigBytes,
    smallResultBytes: settings.smallBytes,
    runStartWalBytes: startSlice.bytes,
    bigStepWalBytes: perStepBytes[0],
    bigStepWalByTable: perStepTables[0],
    smallStepWalBytes: roundDistribution(distribution(small)),
    firstFiveMean: round(mean(head)),
    lastFiveMean: round(mean(tail)),
    slopeBytesPerStep: round(slope),
    perStepWalBytesWithoutFpi: perStepBytes,
    perStepFullPageImageBytes: perStepFpi,
    closingStepWalBytes: perStepBytes.at(-1),
    smallStepTypicalByTable: perStepTables[Math.floor(perStepTables.length / 2)],
  };
}

function linearSlope(xs: number[], ys: number[]): number {
  const mx = mean(xs);
  const my = mean(ys);
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    den += ((xs[i] as number) - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

// ---------------------------------------------------------------------------

const fmtBytes = (bytes: number) =>
  bytes >= MiB ? `${(bytes / MiB).toFixed(2)} MiB` : bytes >= KiB ? `${(bytes / KiB).toFixed(1)} KiB` : `${bytes} B`;

function printTable(rows: Array<[string, string]>): void {
  const width = Math.max(...rows.map(([label]) => label.length));
  for (const [label, value] of rows) console.log(`  ${label.padEnd(width)}  ${value}`);
}

async function main(): Promise<void> {
  let benchEnv: BenchEnv | undefined;
  let services: Services | undefined;
  let worker: WorkerRuntime | undefined;
  let wal: WalProbe | undefined;
  try {
    benchEnv = await createBenchEnv({ maxStepsPerRun: Math.max(64, settings.bigCalls + settings.smallSteps + 8), concurrency: 8 });
    const here = path.dirname(fileURLToPath(import.meta.url));
    const env = { ...benchEnv.env, FOYA_TOOL_MODULES: path.join(here, "support/big-output-tools.ts") };
    const config = loadConfig(env);
    services = await createServices(config, { role: "bench" });
    const app = createApp(services);
    const tenant = await newTenant(app, config.api.adminToken ?? "", sqlPool(config));
    const { rows: version } = await sqlPool(config).query<{ server_version: string }>("show server_version");

    console.log(`context bench: database ${benchEnv.databaseName}, Postgres ${version[0]?.server_version}`);
    console.log("\n1. Context build (1,000-message history, real rows)");
    const build = await contextBuild(services, tenant, app);
    printTable([
      [
        "messages / large results / small results",
        `${build.messages} / ${build.largeResults} (${fmtBytes(build.largeResultBytes)}) / ${build.smallResults}`,
      ],
      ["history as JSON (naive request)", fmtBytes(build.historyJsonBytes)],
      ["history stored (jsonb, after TOAST)", fmtBytes(build.historyStoredBytes)],
      ["projection limit (128k window)", `${build.resultLimitChars} chars`],
      ["loadHistory p50 / p99", `${build.loadMs.p50} / ${build.loadMs.p99} ms`],
      ["compileMessages p50 / p99", `${build.compileMs.p50} / ${build.compileMs.p99} ms`],
      ["compile + JSON.stringify p50 / p99", `${build.compileAndSerializeMs.p50} / ${build.compileAndSerializeMs.p99} ms`],
      ["baseline JSON.stringify(history) p50 / p99", `${build.naiveSerializeMs.p50} / ${build.naiveSerializeMs.p99} ms`],
      [
        "compiled request",
        `${fmtBytes(build.compiledRequestBytes)} (${(build.compiledToHistoryRatio * 100).toFixed(2)} % of history; naive is ${build.naiveToCompiledFactor}x larger)`,
      ],
      [
        "deterministic (two loads, two compilations)",
        `${build.deterministic ? "yes, byte-identical" : "NO"} sha256 ${build.compiledSha256.slice(0, 16)}…`,
      ],
    ]);

    worker = await startWorkerRuntime(services);
    wal = await WalProbe.create(sqlPool(services.config), `${benchEnv.databaseName}_wal`);
    // Warm-up turn: JIT, connections, first pages of every table.
    await runScript(app, tenant, await newSession(app, tenant), [
      [{ tool: "big_output", args: { bytes: 1000, kind: "text" } }],
      [{ text: "ok" }],
    ]);

    console.log(
      `\n2. Bytes written to Postgres per byte of tool output (${settings.bigCalls} calls × ${fmtBytes(settings.bigBytes)}, one call per step)`,
    );
    const amp = [];
    for (const kind of ["random", "text"] as const) {
      const result = await amplification(services, app, tenant, wal, kind);
      amp.push(result);
      console.log(
        `  ${kind === "random" ? "incompressible (random base64)" : "compressible (log lines)"}: ${fmtBytes(result.toolOutputBytes)} of output in ${result.elapsedMs} ms`,
      );
      printTable([
        [
          "  WAL, this database (pg_walinspect)",
          `${fmtBytes(result.walBytesThisDatabase)} = ${result.walPerOutputByte}x (full-page images ${fmtBytes(result.walFpiBytesThisDatabase)})`,
        ],
        [
          "  WAL, whole cluster (pg_stat_wal delta)",
          `${fmtBytes(result.clusterWalBytes)} = ${result.clusterWalPerOutputByte}x (includes other databases)`,
        ],
        ["  relation growth (pg_total_relation_size)", `${fmtBytes(result.relationGrowthTotal)} = ${result.relationGrowthPerOutputByte}x`],
        ...Object.entries(result.walByTable)
          .slice(0, 7)
          .map(([table, entry]): [string, string] => [
            `    WAL ${table}`,
            `${fmtBytes(entry.bytes)} = ${entry.perOutputByte}x, ${entry.records} records`,
          ]),
        ...Object.entries(result.relationGrowthBytes)
          .filter(([, bytes]) => bytes !== 0)
          .map(([table, bytes]): [string, string] => [`    growth ${table}`, fmtBytes(bytes)]),
        [
          "  stored column sizes",
          Object.entries(result.storedColumnBytes)
            .map(([table, bytes]) => `${table} ${fmtBytes(bytes)}`)
            .join(", "),
        ],
        [
          "  aim",
          `≤ ${aims.bytesPerOutputByteMax}x: ${result.walPerOutputByte <= aims.bytesPerOutputByteMax ? "met" : `MISSED by ${round((result.walPerOutputByte / aims.bytesPerOutputByteMax - 1) * 100)} %`}`,
        ],
      ]);
    }

    console.log(
      `\n3. WAL per step (this database, full-page images excluded): one ${fmtBytes(settings.bigBytes)} result, then ${settings.smallSteps} steps with a ${settings.smallBytes}-byte result`,
    );
    const step = await perStep(app, tenant, wal);
    printTable([
      ["step with the big result", fmtBytes(step.bigStepWalBytes ?? 0)],
      [
        "small steps p50 / p90 / max",
        `${fmtBytes(step.smallStepWalBytes.p50)} / ${fmtBytes(step.smallStepWalBytes.p90)} / ${fmtBytes(step.smallStepWalBytes.max)}`,
      ],
      ["first 5 vs last 5 small steps (mean)", `${fmtBytes(step.firstFiveMean)} vs ${fmtBytes(step.lastFiveMean)}`],
      ["slope over the small steps", `${step.slopeBytesPerStep} bytes per step (history grows by ${settings.smallBytes}+ bytes per step)`],
      ["per-step WAL without FPI (bytes)", step.perStepWalBytesWithoutFpi.join(" ")],
      ["per-step full-page images (bytes)", step.perStepFullPageImageBytes.join(" ")],
      [
        "verdict",
        Math.abs(step.lastFiveMean - step.firstFiveMean) < Math.max(2048, step.firstFiveMean * 0.25) &&
        step.smallStepWalBytes.max < settings.bigBytes / 4
          ? "no per-step rewrite of history"
          : "WAL per step grows: CHECK",
      ],
    ]);

    const results = path.join(here, "results");
    mkdirSync(results, { recursive: true });
    writeFileSync(
      path.join(results, "context.json"),
      `${JSON.stringify({ date: new Date().toISOString(), postgres: version[0]?.server_version, settings, aims, contextBuild: build, amplification: amp, perStep: step }, null, 2)}\n`,
    );
    console.log(`\nwrote ${path.join(results, "context.json")}`);
  } finally {
    wal?.close();
    await worker?.close().catch(() => {});
    await services?.close().catch(() => {});
    await benchEnv?.destroy();
  }
}

await main();
