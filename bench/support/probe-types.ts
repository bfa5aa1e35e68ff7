/** Counters a worker process reports for one measurement window (see process-probe.ts). */
export interface ProbeStats {
  /** Postgres statements sent (each one a round trip). */
  queries: number;
  /** Statements that were `BEGIN`, i.e. transactions opened. */
  transactions: number;
  /** Summed send-to-answer time of those statements, ms. */
  queryMs: number;
  /** Connections checked out of the pg pool. */
  poolCheckouts: number;
  /** Summed time callers waited for a pool connection, ms. */
  poolWaitMs: number;
  poolWaitMaxMs: number;
  /** ioredis commands sent (pipelined ones counted one by one, blocking fetches included). */
  redisCommands: number;
  /** Statements by kind, e.g. { "update runs": 120, begin: 60 }. */
  statements: Record<string, number>;
  wallMs: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** Share of wall time the event loop was busy, 0..1. */
  eventLoopUtilization: number;
}

export function sumProbeStats(all: readonly ProbeStats[]): ProbeStats {
  const total: ProbeStats = {
    queries: 0,
    transactions: 0,
    queryMs: 0,
    poolCheckouts: 0,
    poolWaitMs: 0,
    poolWaitMaxMs: 0,
    redisCommands: 0,
    statements: {},
    wallMs: 0,
    cpuUserMs: 0,
    cpuSystemMs: 0,
    eventLoopUtilization: 0,
  };
  for (const stats of all) {
    total.queries += stats.queries;
    total.transactions += stats.transactions;
    total.queryMs += stats.queryMs;
    total.poolCheckouts += stats.poolCheckouts;
    total.poolWaitMs += stats.poolWaitMs;
    total.poolWaitMaxMs = Math.max(total.poolWaitMaxMs, stats.poolWaitMaxMs);
    total.redisCommands += stats.redisCommands;
    for (const [kind, count] of Object.entries(stats.statements)) total.statements[kind] = (total.statements[kind] ?? 0) + count;
    total.wallMs = Math.max(total.wallMs, stats.wallMs);
    total.cpuUserMs += stats.cpuUserMs;
    total.cpuSystemMs += stats.cpuSystemMs;
    // Mean across processes: "how busy was a worker's event loop".
    total.eventLoopUtilization += stats.eventLoopUtilization / all.length;
  }
  return total;
}
