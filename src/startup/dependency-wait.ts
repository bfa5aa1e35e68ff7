import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { createRedisConnection, isCluster, type RedisSettings } from "../net/redis-connection.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Dependency, StartupStatus } from "./startup-status.js";

/**
 * Start-up that survives its dependencies (SPEC D9): a process that starts before Postgres
 * or Redis answers waits for them, retrying with backoff and saying so in the log once per
 * attempt, instead of exiting.
 */

export interface RetryOptions {
  logger: Logger;
  /** Told while the dependency does not answer, so `/readyz` can say what start-up waits for. */
  status?: StartupStatus;
  /** Strings never to log (a connection string's password). */
  secrets?: readonly string[];
  /** Only errors this accepts are waited out; others are thrown at once. Default: every error. */
  retryIf?: (error: unknown) => boolean;
  /** First delay (250 ms), doubled after each failure up to `maxDelayMs` (5 s); each delay is jittered by ±20%. */
  initialDelayMs?: number;
  maxDelayMs?: number;
}

/** The delays between attempts: `initialMs` doubling up to `maxMs`, each jittered by ±20% (never above `maxMs`). */
export function backoffDelays(initialMs = 250, maxMs = 5000): () => number {
  let base = initialMs;
  return () => {
    const delay = Math.min(maxMs, Math.round(base * (0.8 + Math.random() * 0.4)));
    base = Math.min(maxMs, base * 2);
    return delay;
  };
}

/**
 * Runs `action` until it succeeds. Each failure `retryIf` accepts is logged at warn level as
 * "waiting for <dependency>: <short reason>; retry in <n> ms", then waited out with backoff.
 */
export async function retryWhileUnavailable<T>(dependency: Dependency, action: () => Promise<T>, options: RetryOptions): Promise<T> {
  const { logger } = options;
  const nextDelay = backoffDelays(options.initialDelayMs, options.maxDelayMs);
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await action();
      options.status?.waiting(dependency, false);
      if (attempt > 1) logger.info({ dependency, attempts: attempt }, `${dependency} answers`);
      return result;
    } catch (error) {
      if (options.retryIf && !options.retryIf(error)) throw error;
      options.status?.waiting(dependency, true);
      const delay = nextDelay();
      const reason = shortReason(error, options.secrets);
      logger.warn({ dependency, reason, attempt, retryInMs: delay }, `waiting for ${dependency}: ${reason}; retry in ${delay} ms`);
      await sleep(delay);
    }
  }
}

/** Waits until both Postgres and Redis answer (probed side by side, each with its own backoff). */
export async function waitForDependencies(
  config: Pick<Config, "database" | "redis">,
  options: Omit<RetryOptions, "retryIf" | "secrets">,
): Promise<void> {
  options.status?.waiting("postgres", true);
  options.status?.waiting("redis", true);
  await Promise.all([
    retryWhileUnavailable("postgres", () => probePostgres(config.database.url), { ...options, secrets: urlSecrets(config.database.url) }),
    retryWhileUnavailable("redis", () => probeRedis(config.redis), { ...options, secrets: urlSecrets(config.redis.url) }),
  ]);
}

/** One connection and `select 1`, then closed. */
async function probePostgres(url: string, timeoutMs = 3000): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  client.on("error", () => {});
  try {
    await withTimeout(
      (async () => {
        await client.connect();
        await client.query("select 1");
      })(),
      timeoutMs,
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * One connection (ready: not loading its data set) and `PING`, then closed. A cluster must
 * also say `cluster_state:ok`: one whose slots are not all served refuses some of Foya's keys.
 */
async function probeRedis(settings: RedisSettings, timeoutMs = 3000): Promise<void> {
  const redis = createRedisConnection(settings, { probeTimeoutMs: timeoutMs });
  // connect() rejects with "Connection is closed."; the reason (ECONNREFUSED, ...) comes as an event.
  let reason: unknown;
  redis.on("error", (error: unknown) => {
    reason ??= error;
  });
  try {
    await withTimeout(
      (async () => {
        await redis.connect();
        await redis.ping();
        if (isCluster(redis)) {
          const info = await redis.cluster("INFO");
          const state = /cluster_state:(\w+)/.exec(String(info))?.[1];
          if (state !== "ok") throw new Error(`the Redis Cluster's state is ${state ?? "unknown"}, not ok`);
        }
      })(),
      timeoutMs,
    );
  } catch (error) {
    throw reason ?? error;
  } finally {
    redis.disconnect();
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
  promise.catch(() => {});
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const networkErrorCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
]);
/** Postgres: admin or crash shutdown, starting up, too many connections. Class 08 (connection exception) is matched by prefix. */
const unavailableSqlStates = new Set(["57P01", "57P02", "57P03", "53300"]);
const connectionMessages =
  /connection terminated|connection timeout|timeout exceeded when trying to connect|connection error|connection is closed|no answer within/i;

/**
 * Whether an error (or one of its causes) says the server was not there, as opposed to a
 * statement it refused: the first is waited out, the second is a bug to report.
 */
export function isConnectionError(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && typeof current === "object" && depth < 5; depth++) {
    const { code, message, errors } = current as { code?: unknown; message?: unknown; errors?: unknown };
    if (typeof code === "string" && (networkErrorCodes.has(code) || unavailableSqlStates.has(code) || /^08[0-9A-Z]{3}$/.test(code)))
      return true;
    if (typeof message === "string" && connectionMessages.test(message)) return true;
    if (Array.isArray(errors) && errors.some(isConnectionError)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** The password of a connection string, as written and decoded: never logged. */
export function urlSecrets(url: string): string[] {
  // A Redis Cluster's REDIS_URL lists several nodes, comma-separated.
  return url.split(",").flatMap((part) => {
    try {
      const password = new URL(part.trim()).password;
      return password ? [password, decodeURIComponent(password)] : [];
    } catch {
      return [];
    }
  });
}

/**
 * A short reason for the log: a network error's code (ECONNREFUSED), else the message (a
 * server's own words, e.g. "the database system is starting up"), at most 200 characters,
 * with the given secrets and any URL's user information masked.
 */
export function shortReason(error: unknown, secrets: readonly string[] = []): string {
  const { code, message } = (typeof error === "object" && error !== null ? error : {}) as { code?: unknown; message?: unknown };
  let reason =
    typeof code === "string" && networkErrorCodes.has(code)
      ? code
      : typeof message === "string" && message.trim() !== ""
        ? message.trim()
        : typeof code === "string"
          ? code
          : String(error);
  for (const secret of secrets) if (secret) reason = reason.split(secret).join("***");
  reason = reason
    .replace(/\/\/[^/\s@]*@/g, "//***@")
    .replace(/\s+/g, " ")
    .replace(/\.$/, "");
  return reason.length > 200 ? `${reason.slice(0, 197)}...` : reason;
}
