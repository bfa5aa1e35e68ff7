import { describe, expect, it } from "vitest";
import { clusterSeeds, slotTag } from "../../src/net/redis-connection.js";
import { queueName, stepQueueNames, stepShardOf } from "../../src/queue/job-types.js";
import type { RunId } from "../../src/ids.js";

describe("Redis connections and key names", () => {
  it("W4: a cluster's seed nodes come from REDIS_URL, with the first credentials found and TLS from rediss:", () => {
    expect(clusterSeeds("redis://10.0.0.1:7000, rediss://:p%40ss@10.0.0.2,redis://user:other@[::1]:7002")).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 6379 },
        { host: "::1", port: 7002 },
      ],
      credentials: { password: "p@ss", tls: {} },
    });
    expect(() => clusterSeeds(" , ")).toThrow(/names no Redis Cluster node/);
  });

  it("W4: every queue name is a hash tag; one step queue is {steps}, shards are {steps-<n>}", () => {
    expect(slotTag("ses_1")).toBe("{ses_1}");
    expect(queueName("tools-host-1")).toBe("{tools-host-1}");
    expect(() => queueName("a:b")).toThrow();
    expect(() => queueName("{a}")).toThrow();
    expect(stepQueueNames(1)).toEqual(["{steps}"]);
    expect(stepQueueNames(3)).toEqual(["{steps-0}", "{steps-1}", "{steps-2}"]);
  });

  it("W4: a run's step shard is fixed by its id and the shards are all used", () => {
    const runs = Array.from({ length: 200 }, (_, i) => `run_${i.toString(36)}x${(i * 7919).toString(36)}` as RunId);
    for (const runId of runs) {
      expect(stepShardOf(runId, 1)).toBe(0);
      const shard = stepShardOf(runId, 8);
      expect(shard).toBe(stepShardOf(runId, 8));
      expect(shard).toBeGreaterThanOrEqual(0);
      expect(shard).toBeLessThan(8);
    }
    expect(new Set(runs.map((runId) => stepShardOf(runId, 8))).size).toBe(8);
  });
});
