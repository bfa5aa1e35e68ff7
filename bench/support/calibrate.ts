import { performance } from "node:perf_hooks";
import type { RedisConnection } from "../../src/net/redis-connection.js";
import type pg from "pg";
import { distribution, round } from "./stats.js";

/**
 * Raw round-trip cost on this machine, from the benchmark process: `select 1`
 * on one pg connection and `PING` on one Redis connection, sequentially. It
 * tells whether a step's time is network waiting or client-side CPU.
 */
export interface Calibration {
  pgSelect1P50Ms: number;
  pgSelect1P99Ms: number;
  /** Client CPU per `select 1` (pg driver + syscalls), ms. */
  pgClientCpuMs: number;
  redisPingP50Ms: number;
  redisPingP99Ms: number;
  redisClientCpuMs: number;
}

async function timeSequential(count: number, work: () => Promise<unknown>): Promise<{ times: number[]; cpuMs: number }> {
  for (let i = 0; i < 50; i++) await work(); // warm-up
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  const used = process.cpuUsage(cpu);
  return { times, cpuMs: (used.user + used.system) / 1000 / count };
}

export async function calibrate(pool: pg.Pool, redis: RedisConnection, count = 1000): Promise<Calibration> {
  const client = await pool.connect();
  try {
    const pgTimes = await timeSequential(count, () => client.query("select 1"));
    const redisTimes = await timeSequential(count, () => redis.ping());
    const pgDist = distribution(pgTimes.times);
    const redisDist = distribution(redisTimes.times);
    return {
      pgSelect1P50Ms: round(pgDist.p50),
      pgSelect1P99Ms: round(pgDist.p99),
      pgClientCpuMs: round(pgTimes.cpuMs),
      redisPingP50Ms: round(redisDist.p50),
      redisPingP99Ms: round(redisDist.p99),
      redisClientCpuMs: round(redisTimes.cpuMs),
    };
  } finally {
    client.release();
  }
}
