import type { RedisConnection } from "../../net/redis-connection.js";
import type { Logger } from "../../logger.js";

/**
 * Fixed-window counters in Redis, shared by every API instance (SPEC S10). A window starts
 * with its first hit and lasts `windowMs`; the count and the expiry are set in one script,
 * so a counter can never be left without an expiry.
 */
export interface FixedWindowCounter {
  /** Counts one more; answers the count in the current window and the milliseconds left in it. */
  hit(key: string, windowMs: number): Promise<WindowCount>;
  /**
   * Current counts without adding to them (0 where no window is open), in one round trip, in the
   * order of `keys`, which must share a hash tag: on a Redis Cluster a pipeline reaches one slot.
   */
  peekMany(keys: readonly string[]): Promise<WindowCount[]>;
}

export interface WindowCount {
  count: number;
  resetInMs: number;
}

const hitScript = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

/**
 * A limit must not make the API depend on Redis answering quickly: a call that takes longer
 * than this counts as nothing (the request is let through) and is logged.
 */
const redisDeadlineMs = 1000;

export function createFixedWindowCounter(redis: RedisConnection, logger: Logger): FixedWindowCounter {
  const run = async (script: string, key: string, args: Array<string | number>): Promise<WindowCount> => {
    try {
      const answer = await withDeadline(redis.eval(script, 1, key, ...args));
      const [count, ttl] = answer as [number, number];
      return { count, resetInMs: Math.max(0, ttl) };
    } catch (error) {
      logger.warn({ err: error, key }, "rate limit counter unavailable; the request is not limited");
      return { count: 0, resetInMs: 0 };
    }
  };
  return {
    hit: (key, windowMs) => run(hitScript, key, [windowMs]),
    async peekMany(keys) {
      try {
        const pipeline = redis.pipeline();
        for (const key of keys) pipeline.get(key).pttl(key);
        const answers = (await withDeadline(pipeline.exec())) ?? [];
        return keys.map((_, i) => {
          const [countError, count] = answers[2 * i] ?? [null, null];
          const [ttlError, ttl] = answers[2 * i + 1] ?? [null, null];
          if (countError || ttlError) throw countError ?? ttlError;
          return { count: Number(count ?? 0), resetInMs: Math.max(0, Number(ttl ?? 0)) };
        });
      } catch (error) {
        logger.warn({ err: error, keys }, "rate limit counter unavailable; the request is not limited");
        return keys.map(() => ({ count: 0, resetInMs: 0 }));
      }
    },
  };
}

/** Rejects when Redis has not answered within `redisDeadlineMs`. */
export function withDeadline<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis did not answer within ${redisDeadlineMs} ms`)), redisDeadlineMs);
    timer.unref();
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Whole seconds for Retry-After: at least 1, rounded up. */
export function retryAfterSeconds(resetInMs: number): number {
  return Math.max(1, Math.ceil(resetInMs / 1000));
}
