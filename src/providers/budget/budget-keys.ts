import { slotTag, type RedisConnection } from "../../net/redis-connection.js";
import type { TenantId } from "../../ids.js";

/**
 * The Redis keys of one profile's budget: `<prefix>:provider:{<profile>}:...`, all under the
 * profile's hash tag, so every budget script touches one slot (docs/operations.md, 3.6). The
 * name is URI-encoded: a brace in it would move the tag.
 */
export interface BudgetKeys {
  window: string;
  inflight: string;
  pause: string;
  waiting: string;
  weights: string;
  stats: string;
  tenantWindow(tenantId: TenantId): string;
  tenantInflight(tenantId: TenantId): string;
}

export function budgetKeys(prefix: string, profile: string): BudgetKeys {
  const base = `${prefix}:provider:${slotTag(encodeURIComponent(profile))}`;
  return {
    window: `${base}:window`,
    inflight: `${base}:inflight`,
    pause: `${base}:pause`,
    waiting: `${base}:waiting`,
    weights: `${base}:weights`,
    stats: `${base}:stats`,
    tenantWindow: (tenantId) => `${base}:tenant:${tenantId}:window`,
    tenantInflight: (tenantId) => `${base}:tenant:${tenantId}:inflight`,
  };
}

/** `promise`'s answer within `ms`, or a rejection: a budget must never hold a step on a Redis that does not answer. */
export async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis did not answer within ${ms} ms`)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A script of `keys` (all under one profile's tag), answered within `ms`. */
export function evalWithin(redis: RedisConnection, ms: number, script: string, keys: string[], args: Array<string | number>) {
  return within(ms, redis.eval(script, keys.length, ...keys, ...args));
}
