/**
 * Preloaded into every benchmark worker process (`node --import tsx --import <this file> ...`).
 *
 * It counts, without changing behaviour:
 * - Postgres round trips (`pg.Client#query`, which both `pool.query` and drizzle's
 *   transactions go through), how many of them open a transaction (`BEGIN`), and
 *   the time from send to answer;
 * - pool checkouts (`pg.Pool#connect`) and how long callers waited for a connection;
 * - Redis commands (`ioredis` `Redis#sendCommand`; pipelined commands are counted one by one);
 * - this process's CPU time and event-loop utilization.
 *
 * The parent asks for the figures over IPC (execa `ipc: true`): "probe:reset"
 * starts a measurement window, "probe:read" answers the counters since then.
 */
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import { getEachMessage, sendMessage } from "execa";
import { Redis } from "ioredis";
import pg from "pg";
import type { ProbeStats } from "./probe-types.js";

/** The counters this probe accumulates; the rest of ProbeStats is read when reporting. */
type Counters = Pick<
  ProbeStats,
  "queries" | "transactions" | "queryMs" | "poolCheckouts" | "poolWaitMs" | "poolWaitMaxMs" | "redisCommands" | "statements"
>;

const fresh = (): Counters => ({
  queries: 0,
  transactions: 0,
  queryMs: 0,
  poolCheckouts: 0,
  poolWaitMs: 0,
  poolWaitMaxMs: 0,
  redisCommands: 0,
  statements: {},
});

let counters = fresh();
let windowStart = performance.now();
let cpuStart = process.cpuUsage();
let eluStart: EventLoopUtilization = performance.eventLoopUtilization();

type Callback = (...args: unknown[]) => unknown;
const isCallback = (value: unknown): value is Callback => typeof value === "function";
const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";

/** Calls `done` once the call settles, whether it takes a trailing callback or returns a promise. */
function whenSettled(args: unknown[], invoke: (args: unknown[]) => unknown, done: () => void): unknown {
  const last = args[args.length - 1];
  if (isCallback(last)) {
    const wrapped = [
      ...args.slice(0, -1),
      (...cbArgs: unknown[]) => {
        done();
        return last(...cbArgs);
      },
    ];
    return invoke(wrapped);
  }
  const result = invoke(args);
  if (isThenable(result)) result.then(done, done);
  else done();
  return result;
}

/** "verb table" for a statement, e.g. "insert events", "select runs", "with sessions", "begin". */
function statementKind(text: string): string {
  const normalized = text.trim().toLowerCase();
  const verb = /^[a-z]+/.exec(normalized)?.[0] ?? "other";
  const table = /\b(?:from|into|update)\s+"?([a-z_]+)"?/.exec(normalized)?.[1];
  return table ? `${verb} ${table}` : verb;
}

function queryText(first: unknown): string {
  if (typeof first === "string") return first;
  if (typeof first === "object" && first !== null && typeof (first as { text?: unknown }).text === "string") {
    return (first as { text: string }).text;
  }
  return "";
}

// --- Postgres ---------------------------------------------------------------
const clientProto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const originalQuery = clientProto.query;
clientProto.query = function probedQuery(this: unknown, ...args: unknown[]): unknown {
  counters.queries++;
  const kind = statementKind(queryText(args[0]));
  counters.statements[kind] = (counters.statements[kind] ?? 0) + 1;
  if (kind === "begin") counters.transactions++;
  const started = performance.now();
  return whenSettled(
    args,
    (callArgs) => originalQuery.apply(this, callArgs),
    () => {
      counters.queryMs += performance.now() - started;
    },
  );
};

const poolProto = pg.Pool.prototype as unknown as { connect: (...args: unknown[]) => unknown };
const originalConnect = poolProto.connect;
poolProto.connect = function probedConnect(this: unknown, ...args: unknown[]): unknown {
  counters.poolCheckouts++;
  const started = performance.now();
  return whenSettled(
    args,
    (callArgs) => originalConnect.apply(this, callArgs),
    () => {
      const waited = performance.now() - started;
      counters.poolWaitMs += waited;
      if (waited > counters.poolWaitMaxMs) counters.poolWaitMaxMs = waited;
    },
  );
};

// --- Redis ------------------------------------------------------------------
const redisProto = Redis.prototype as unknown as { sendCommand: (...args: unknown[]) => unknown };
const originalSendCommand = redisProto.sendCommand;
redisProto.sendCommand = function probedSendCommand(this: unknown, ...args: unknown[]): unknown {
  counters.redisCommands++;
  return originalSendCommand.apply(this, args);
};

// --- IPC with the benchmark -------------------------------------------------
function read(): ProbeStats {
  const wallMs = performance.now() - windowStart;
  const cpu = process.cpuUsage(cpuStart);
  const elu = performance.eventLoopUtilization(eluStart);
  return {
    ...counters,
    statements: { ...counters.statements },
    wallMs,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
    eventLoopUtilization: elu.utilization,
  };
}

function reset(): void {
  counters = fresh();
  windowStart = performance.now();
  cpuStart = process.cpuUsage();
  eluStart = performance.eventLoopUtilization();
}

if (process.send) {
  void (async () => {
    // `reference: false`: listening must not keep a worker alive once it is told to stop.
    for await (const message of getEachMessage({ reference: false })) {
      if (message === "probe:reset") {
        reset();
        await sendMessage({ type: "probe:reset-done" });
      } else if (message === "probe:read") {
        await sendMessage({ type: "probe:stats", stats: { ...read() } });
      }
    }
  })().catch(() => {});
}
