import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { loadConfig, type ProviderProfileConfig } from "../../src/config.js";
import type { TenantId } from "../../src/ids.js";
import { createLogger } from "../../src/logger.js";
import { createRedisConnection, type RedisConnection } from "../../src/net/redis-connection.js";
import { createProviderBudgets } from "../../src/providers/budget/create-provider-budgets.js";
import type { BudgetAsk, BudgetDecision, BudgetLease, ProviderBudgets } from "../../src/providers/budget/provider-budgets.js";
import { redisClusterUnavailable, startRedisCluster } from "../helpers/redis-cluster.js";
import { dropRedisPrefix, writeProvidersFile } from "../helpers/test-env.js";

/**
 * Provider budgets (SPEC PR3) against the real Redis: the window, the estimate and its
 * correction, requests in flight, pauses and the fair share, as every worker would see them.
 * Windows are the shortest the schema allows (1 s), so waits are a fraction of a second.
 */
let redis: RedisConnection;
let prefix: string;
let budgets: ProviderBudgets;
let profiles: readonly ProviderProfileConfig[];
const clusterUnavailable = await redisClusterUnavailable();

const tenantA = "ten_a" as TenantId;
const tenantB = "ten_b" as TenantId;

beforeAll(async () => {
  prefix = `foya-test-budget-${randomBytes(4).toString("hex")}`;
  redis = createRedisConnection({ url: inject("redisUrl"), cluster: false });
  const base = { kind: "openai-chat", baseUrl: "http://127.0.0.1:9/v1", model: "m" };
  const file = await writeProvidersFile([
    { ...base, name: "requests", budget: { requestsPerMinute: 3, windowMs: 1000 } },
    { ...base, name: "tokens", budget: { inputTokensPerMinute: 1000, outputTokensPerMinute: 1000, windowMs: 1000 } },
    { ...base, name: "flight", budget: { concurrentRequests: 2, windowMs: 1000 } },
    { ...base, name: "shared", budget: { requestsPerMinute: 4, windowMs: 1000 } },
    { ...base, name: "free" },
  ]);
  profiles = loadConfig({ FOYA_PROVIDERS_FILE: file }).providers.profiles;
  budgets = createProviderBudgets({ redis, keyPrefix: prefix, profiles, logger: createLogger("silent") });
});
afterAll(async () => {
  await dropRedisPrefix(inject("redisUrl"), prefix);
  redis?.disconnect();
});

const ask = (profile: string, overrides: Partial<BudgetAsk> = {}): BudgetAsk => ({
  profile,
  tenantId: tenantA,
  weight: 1,
  waiterId: "job-1",
  inputChars: 400,
  ...overrides,
});

function granted(decision: BudgetDecision): BudgetLease {
  if (decision.kind !== "granted") throw new Error(`expected a grant, got ${JSON.stringify(decision)}`);
  return decision.lease;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("provider budgets", () => {
  it("PR3: requests per window: past the limit a step waits until the oldest slice leaves the window, then goes", async () => {
    for (let i = 0; i < 3; i++) granted(await budgets.acquire(ask("requests")));
    const refused = await budgets.acquire(ask("requests"));
    expect(refused).toMatchObject({ kind: "wait", reason: "requests" });
    const ms = (refused as { ms: number }).ms;
    // A window (1 s) and at most a slice (50 ms) after the first grant, less the time the grants took.
    expect(ms).toBeGreaterThan(500);
    expect(ms).toBeLessThanOrEqual(1050);
    expect((await budgets.state("requests")).used.requests).toBe(3);
    await sleep(ms + 20);
    granted(await budgets.acquire(ask("requests")));
  });

  it("PR3: input tokens are estimated from characters, corrected with the reported usage, and the ratio is learned", async () => {
    const first = granted(await budgets.acquire(ask("tokens", { inputChars: 2000 })));
    expect(first.estimate).toEqual({ inputTokens: 500, outputTokens: 0 });
    // The provider counted 800 input tokens (0.4 a character) and 100 output tokens.
    await first.settle({ inputTokens: 800, outputTokens: 100 });
    expect((await budgets.state("tokens")).used).toMatchObject({ requests: 1, inputTokens: 800, outputTokens: 100, concurrent: 0 });
    const second = granted(await budgets.acquire(ask("tokens", { inputChars: 100 })));
    // The first report replaces the default 0.25 a character; the output is reserved at the average so far.
    expect(second.estimate).toEqual({ inputTokens: 40, outputTokens: 100 });
    await second.settle(undefined);
    // 840 of 1000 input tokens used (a call without a report keeps its estimate): 480 more wait, 40 go.
    expect(await budgets.acquire(ask("tokens", { inputChars: 1200 }))).toMatchObject({ kind: "wait", reason: "input_tokens" });
    granted(await budgets.acquire(ask("tokens", { inputChars: 100 })));
  });

  it("PR3: a request larger than a whole limit goes alone, into an empty window", async () => {
    await sleep(1100);
    const huge = granted(await budgets.acquire(ask("tokens", { inputChars: 100_000 })));
    expect(huge.estimate.inputTokens).toBeGreaterThan(1000);
    expect(await budgets.acquire(ask("tokens", { inputChars: 10 }))).toMatchObject({ kind: "wait", reason: "input_tokens" });
  });

  it("PR3: requests in flight are counted until settled; a settle is idempotent", async () => {
    const one = granted(await budgets.acquire(ask("flight")));
    const two = granted(await budgets.acquire(ask("flight")));
    expect(await budgets.acquire(ask("flight"))).toMatchObject({ kind: "wait", reason: "concurrency" });
    expect((await budgets.state("flight")).used.concurrent).toBe(2);
    await one.settle(undefined);
    await one.settle(undefined);
    const three = granted(await budgets.acquire(ask("flight")));
    expect((await budgets.state("flight")).used.concurrent).toBe(2);
    await Promise.all([two.settle(undefined), three.settle(undefined)]);
  });

  it("PR3: a pause stops every caller of the profile until it ends; a shorter one does not cut it", async () => {
    await budgets.pause("free", 600);
    await budgets.pause("free", 100);
    const paused = await budgets.acquire(ask("free"));
    expect(paused).toMatchObject({ kind: "wait", reason: "paused" });
    expect((paused as { ms: number }).ms).toBeGreaterThan(300);
    expect((paused as { ms: number }).ms).toBeLessThanOrEqual(600);
    expect((await budgets.state("free")).pausedForMs).toBeGreaterThan(200);
    expect(await budgets.acquire(ask("requests", { tenantId: tenantB }))).not.toMatchObject({ reason: "paused" });
    await sleep(650);
    granted(await budgets.acquire(ask("free")));
  });

  it("PR3: while another tenant waits, a tenant at its fair share waits too; alone, it may use the whole budget", async () => {
    // A alone takes all 4 requests of the window.
    for (let i = 0; i < 4; i++) granted(await budgets.acquire(ask("shared", { waiterId: `a-${i}` })));
    // B waits for the window, and is registered as waiting.
    const b = await budgets.acquire(ask("shared", { tenantId: tenantB, waiterId: "b-0" }));
    expect(b).toMatchObject({ kind: "wait", reason: "requests" });
    // Past the whole window (B stays registered 2 s past its wait), however slowly A's four were granted.
    expect((b as { ms: number }).ms).toBeLessThanOrEqual(1100);
    await sleep(1100);
    // The window is free again: A takes half (its share while B waits), not all of it.
    granted(await budgets.acquire(ask("shared", { waiterId: "a-4" })));
    granted(await budgets.acquire(ask("shared", { waiterId: "a-5" })));
    expect(await budgets.acquire(ask("shared", { waiterId: "a-6" }))).toMatchObject({ kind: "wait", reason: "fair_share" });
    const served = granted(await budgets.acquire(ask("shared", { tenantId: tenantB, waiterId: "b-0" })));
    expect(served.profile).toBe("shared");
    const state = await budgets.state("shared", tenantB);
    expect(state.tenantUsed?.requests).toBe(1);
    expect(state.used.requests).toBe(3);
  });

  it("PR3: a profile without a budget counts nothing, and only a pause stops it", async () => {
    const lease = granted(await budgets.acquire(ask("free")));
    expect(lease.estimate).toEqual({ inputTokens: 0, outputTokens: 0 });
    expect(await budgets.state("free")).toMatchObject({ limits: null, pausedForMs: 0 });
  });

  it.skipIf(clusterUnavailable !== undefined)(
    "PR3, W4: on a Redis Cluster every script runs on its profile's one slot",
    async () => {
      const cluster = await startRedisCluster();
      const connection = createRedisConnection({ url: cluster.url, cluster: true });
      try {
        const onCluster = createProviderBudgets({ redis: connection, keyPrefix: prefix, profiles, logger: createLogger("silent") });
        const lease = granted(await onCluster.acquire(ask("tokens", { inputChars: 400 })));
        // An uncounted lease (the fallback when Redis refuses a script) would estimate nothing.
        expect(lease.estimate.inputTokens).toBe(100);
        await lease.settle({ inputTokens: 120, outputTokens: 7 });
        await onCluster.pause("free", 5000);
        expect(await onCluster.acquire(ask("free"))).toMatchObject({ kind: "wait", reason: "paused" });
        expect(await onCluster.state("tokens", tenantA)).toMatchObject({
          used: { requests: 1, inputTokens: 120, outputTokens: 7, concurrent: 0 },
          tenantUsed: { requests: 1, inputTokens: 120, outputTokens: 7, concurrent: 0 },
        });
      } finally {
        connection.disconnect();
        await cluster.stop();
      }
    },
    60_000,
  );
});
