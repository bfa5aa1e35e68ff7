import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { repoRoot } from "./processes.js";

/**
 * One isolated Foya for the benchmark: a fresh database, a random queue prefix
 * (and a second one for the bare-BullMQ baseline), a temporary workspace folder.
 * `destroy()` removes all of it.
 */
export interface BenchEnv {
  /** Environment for `loadConfig` and for the worker processes. */
  env: Record<string, string>;
  databaseName: string;
  redisUrl: string;
  queuePrefix: string;
  baselinePrefix: string;
  destroy(): Promise<void>;
}

export async function createBenchEnv(options: { maxStepsPerRun: number; concurrency: number }): Promise<BenchEnv> {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const suffix = randomBytes(5).toString("hex");
  const databaseName = `foya_bench_${suffix}`;

  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${databaseName}`);
  } finally {
    await admin.end();
  }
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${databaseName}`;
  const workspaces = await mkdtemp(path.join(tmpdir(), "foya-bench-ws-"));
  const queuePrefix = `foya-bench-${suffix}`;
  const baselinePrefix = `foya-bench-base-${suffix}`;

  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl.toString(),
    REDIS_URL: redisUrl,
    FOYA_QUEUE_PREFIX: queuePrefix,
    FOYA_WORKSPACES_DIR: workspaces,
    FOYA_ADMIN_TOKEN: `bench-admin-${randomBytes(8).toString("hex")}`,
    FOYA_TOOL_MODULES: path.join(repoRoot, "test/fixtures/test-tools.ts"),
    FOYA_STEP_CONCURRENCY: String(options.concurrency),
    FOYA_TOOL_CONCURRENCY: String(options.concurrency),
    FOYA_MAX_STEPS_PER_RUN: String(options.maxStepsPerRun),
    // One tenant drives every run here: the engine is measured, not the per-tenant admission (X5), which would cap it at 32.
    FOYA_QUOTA_ACTIVE_RUNS: "100000",
    FOYA_SHUTDOWN_GRACE_MS: "3000",
    FOYA_DEFAULT_PROVIDER: "scripted",
    // The sub-agent benchmark's tenant is granted Full Access (SPEC S8: the deployment must allow it too).
    FOYA_ALLOW_FULL_ACCESS: "true",
    // Neutralize anything inherited from the caller's shell that would change behaviour.
    FOYA_FAILPOINTS: "",
    FOYA_PROVIDERS_FILE: "",
    FOYA_OPENAI_BASE_URL: "",
    LOG_LEVEL: "error",
    PORT: "0",
  };

  let destroyed = false;
  return {
    env,
    databaseName,
    redisUrl,
    queuePrefix,
    baselinePrefix,
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      const dropDatabase = async () => {
        const client = new pg.Client({ connectionString: adminUrl });
        try {
          await client.connect();
          await client.query(`drop database if exists ${databaseName} with (force)`);
        } finally {
          await client.end().catch(() => {});
        }
      };
      const results = await Promise.allSettled([
        dropDatabase(),
        deleteRedisPrefix(redisUrl, queuePrefix),
        deleteRedisPrefix(redisUrl, baselinePrefix),
        rm(workspaces, { recursive: true, force: true }),
      ]);
      const failures = results.flatMap((result) => (result.status === "rejected" ? [result.reason as unknown] : []));
      if (failures.length > 0) throw new AggregateError(failures, "benchmark cleanup was incomplete");
    },
  };
}

/** Deletes every key under `<prefix>:` (BullMQ queues); pub/sub channels hold no keys. */
async function deleteRedisPrefix(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl);
  let deleted = 0;
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
  return deleted;
}

/** Keys still under `<prefix>:`, to confirm cleanup. */
export async function countRedisPrefix(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl);
  let count = 0;
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      count += keys.length;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
  return count;
}
