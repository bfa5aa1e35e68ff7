import { randomBytes } from "node:crypto";
import { slotTag, type RedisConnection } from "../../net/redis-connection.js";
import type { Logger } from "../../logger.js";
import { withDeadline } from "./fixed-window-counter.js";
import type { TenantId } from "../../ids.js";

/**
 * Open SSE streams per tenant, across every API instance (SPEC S10). Each open stream holds
 * a slot: a member of the tenant's sorted set in Redis, scored with when it lapses. A stream
 * renews its slot on every keepalive and gives it back when it ends (the client closed it,
 * went away, or the server is shutting down); a slot whose process died lapses after
 * `ttlMs` and is swept by the next acquire. Times come from the Redis server's clock, so
 * instances with skewed clocks agree.
 */
export interface EventStreamSlots {
  /** A slot for one more stream of the tenant, or null when the tenant has `max` open. */
  acquire(tenantId: TenantId): Promise<EventStreamSlot | null>;
}

export interface EventStreamSlot {
  /** Renews the slot's lease; called on each keepalive. */
  renew(): void;
  /** Frees the slot; idempotent. */
  release(): void;
}

const acquireScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

const renewScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`;

export function createEventStreamSlots(options: {
  redis: RedisConnection;
  logger: Logger;
  keyPrefix: string;
  max: number;
  ttlMs: number;
}): EventStreamSlots {
  const { redis, logger, max, ttlMs } = options;
  const unlimited: EventStreamSlot = { renew: () => undefined, release: () => undefined };
  return {
    async acquire(tenantId) {
      if (max <= 0) return unlimited;
      const key = `${options.keyPrefix}:limits:streams:${slotTag(tenantId)}`;
      const member = randomBytes(9).toString("base64url");
      try {
        if ((await withDeadline(redis.eval(acquireScript, 1, key, member, max, ttlMs))) !== 1) return null;
      } catch (error) {
        logger.warn({ err: error, tenantId }, "stream slots unavailable; the stream is not counted");
        return unlimited;
      }
      let released = false;
      // Commands on one connection run in order, so nothing sent before the release can revive the slot after it.
      const warn = (error: unknown) => logger.warn({ err: error, tenantId }, "stream slot update failed");
      return {
        renew() {
          if (!released) redis.eval(renewScript, 1, key, member, ttlMs).catch(warn);
        },
        release() {
          if (released) return;
          released = true;
          redis.zrem(key, member).catch(warn);
        },
      };
    },
  };
}
