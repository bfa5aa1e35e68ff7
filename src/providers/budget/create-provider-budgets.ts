import { randomBytes } from "node:crypto";
import type { ProviderBudgetConfig, ProviderProfileConfig } from "../../config.js";
import type { Logger } from "../../logger.js";
import type { RedisConnection } from "../../net/redis-connection.js";
import type { TenantId } from "../../ids.js";
import { budgetKeys, evalWithin, within, type BudgetKeys } from "./budget-keys.js";
import { acquireScript, pauseScript, settleScript, stateScript } from "./budget-scripts.js";
import type { BudgetAsk, BudgetCounts, BudgetDecision, BudgetLease, BudgetWaitReason, ProviderBudgets } from "./provider-budgets.js";

export interface ProviderBudgetsOptions {
  redis: RedisConnection;
  /** FOYA_QUEUE_PREFIX: one deployment's budgets, whatever else shares the Redis. */
  keyPrefix: string;
  profiles: readonly ProviderProfileConfig[];
  logger: Logger;
}

/** Slices of a window: the window counts up to one slice (5 %) more than the last `windowMs`. */
const slicesPerWindow = 20;
/** A waiter stays registered this long past the wait it was told, for its job to come back. */
const waiterGraceMs = 2000;
const redisDeadlineMs = 2000;
/** The learned tokens per character and average output outlive a quiet week. */
const statsTtlMs = 7 * 24 * 3_600_000;
const noCounts: BudgetCounts = { requests: 0, inputTokens: 0, outputTokens: 0, concurrent: 0 };

/** Provider budgets in Redis (the contract: provider-budgets.ts; the scripts: budget-scripts.ts). */
export function createProviderBudgets(options: ProviderBudgetsOptions): ProviderBudgets {
  const { redis, logger } = options;
  const profiles = new Map(options.profiles.map((profile) => [profile.name, profile]));
  const budgetOf = (name: string): ProviderBudgetConfig | undefined => profiles.get(name)?.budget;
  const keysOf = (name: string) => budgetKeys(options.keyPrefix, name);
  const uncounted = (profile: string): BudgetDecision => ({ kind: "granted", lease: idleLease(profile) });

  const pausedFor = async (profile: string): Promise<number> =>
    Math.max(0, await within(redisDeadlineMs, redis.pttl(keysOf(profile).pause)));

  return {
    async acquire(ask) {
      const budget = budgetOf(ask.profile);
      try {
        if (!budget) {
          const ms = await pausedFor(ask.profile);
          return ms > 0 ? { kind: "wait", ms, reason: "paused" } : uncounted(ask.profile);
        }
        return await acquireCounted({ redis, logger, keys: keysOf(ask.profile), profile: profiles.get(ask.profile) }, budget, ask);
      } catch (error) {
        logger.warn({ err: error, profile: ask.profile }, "provider budget unavailable; the request is not counted");
        return uncounted(ask.profile);
      }
    },

    async pause(profile, ms) {
      if (ms <= 0) return;
      try {
        await evalWithin(redis, redisDeadlineMs, pauseScript, [keysOf(profile).pause], [Math.ceil(ms)]);
      } catch (error) {
        logger.warn({ err: error, profile }, "pausing a provider profile failed");
      }
    },

    async state(profile, tenantId) {
      const budget = budgetOf(profile);
      if (!budget) return { profile, windowMs: 0, limits: null, used: noCounts, pausedForMs: await pausedFor(profile) };
      const keys = keysOf(profile);
      const timing = windowTiming(budget);
      const mine = tenantId ? [keys.tenantWindow(tenantId), keys.tenantInflight(tenantId)] : [keys.window, keys.inflight];
      const answer = (await evalWithin(
        redis,
        redisDeadlineMs,
        stateScript,
        [keys.window, keys.inflight, keys.pause, ...mine],
        [timing.sliceMs, slicesPerWindow],
      )) as number[];
      const counts = (at: number): BudgetCounts => ({
        requests: Number(answer[at]),
        inputTokens: Number(answer[at + 1]),
        outputTokens: Number(answer[at + 2]),
        concurrent: Number(answer[at + 3]),
      });
      return {
        profile,
        windowMs: budget.windowMs,
        limits: {
          requests: budget.requestsPerMinute,
          inputTokens: budget.inputTokensPerMinute,
          outputTokens: budget.outputTokensPerMinute,
          concurrent: budget.concurrentRequests,
        },
        used: counts(0),
        ...(tenantId ? { tenantUsed: counts(4) } : {}),
        pausedForMs: Number(answer[8]),
      };
    },
  };
}

/** The acquire script for a profile with a budget: a counted lease, or the wait. */
async function acquireCounted(
  scope: { redis: RedisConnection; logger: Logger; keys: BudgetKeys; profile: ProviderProfileConfig | undefined },
  budget: ProviderBudgetConfig,
  ask: BudgetAsk,
): Promise<BudgetDecision> {
  const { keys } = scope;
  const leaseId = randomBytes(9).toString("base64url");
  const timing = windowTiming(budget);
  const limits = [budget.requestsPerMinute, budget.inputTokensPerMinute, budget.outputTokensPerMinute, budget.concurrentRequests];
  // In the order of the script's KEYS and ARGV (budget-scripts.ts, acquire).
  const keyList = [keys.window, keys.inflight, keys.pause, keys.waiting, keys.weights, keys.tenantWindow(ask.tenantId)];
  const asker = [ask.inputChars, ask.tenantId, Math.max(1, ask.weight), ask.waiterId];
  const lease = [leaseId, leaseTtlOf(scope.profile), timing.pollMs, waiterGraceMs, timing.keyTtlMs];
  const answer = (await evalWithin(
    scope.redis,
    redisDeadlineMs,
    acquireScript,
    [...keyList, keys.tenantInflight(ask.tenantId), keys.stats],
    [timing.sliceMs, slicesPerWindow, ...limits, ...asker, ...lease],
  )) as [number, number, string | number, number?];
  if (answer[0] !== 1) return { kind: "wait", ms: Number(answer[1]), reason: String(answer[2]) as BudgetWaitReason };
  const counted = { leaseId, slice: Number(answer[1]), inputTokens: Number(answer[2]), outputTokens: Number(answer[3]) };
  const leaseScope = {
    redis: scope.redis,
    logger: scope.logger,
    keys,
    tenantId: ask.tenantId,
    profile: ask.profile,
    inputChars: ask.inputChars,
  };
  return { kind: "granted", lease: countedLease(leaseScope, counted) };
}

function windowTiming(budget: ProviderBudgetConfig): { sliceMs: number; pollMs: number; keyTtlMs: number } {
  const sliceMs = Math.ceil(budget.windowMs / slicesPerWindow);
  // A step waiting for a request in flight to end looks again this often: a slice, within 50 ms to 1 s.
  return { sliceMs, pollMs: Math.min(1000, Math.max(50, sliceMs)), keyTtlMs: 2 * budget.windowMs + 60_000 };
}

/** How long a call holds its place in flight if its worker dies: the profile's deadline and a margin. */
function leaseTtlOf(profile: ProviderProfileConfig | undefined): number {
  const timeoutMs = profile && "timeoutMs" in profile ? profile.timeoutMs : 120_000;
  return timeoutMs + 30_000;
}

function idleLease(profile: string): BudgetLease {
  return { profile, estimate: { inputTokens: 0, outputTokens: 0 }, settle: async () => undefined };
}

interface LeaseScope {
  redis: RedisConnection;
  logger: Logger;
  keys: BudgetKeys;
  tenantId: TenantId;
  profile: string;
  inputChars: number;
}

function countedLease(
  scope: LeaseScope,
  counted: { leaseId: string; slice: number; inputTokens: number; outputTokens: number },
): BudgetLease {
  let settled = false;
  const { keys, tenantId } = scope;
  return {
    profile: scope.profile,
    estimate: { inputTokens: counted.inputTokens, outputTokens: counted.outputTokens },
    async settle(usage) {
      if (settled) return;
      settled = true;
      try {
        await evalWithin(
          scope.redis,
          redisDeadlineMs,
          settleScript,
          [keys.window, keys.inflight, keys.tenantWindow(tenantId), keys.tenantInflight(tenantId), keys.stats],
          [
            counted.leaseId,
            counted.slice,
            counted.inputTokens,
            counted.outputTokens,
            usage ? usage.inputTokens : -1,
            usage ? usage.outputTokens : -1,
            scope.inputChars,
            statsTtlMs,
          ],
        );
      } catch (error) {
        scope.logger.warn({ err: error, profile: scope.profile }, "settling a provider budget lease failed; it lapses on its own");
      }
    },
  };
}
