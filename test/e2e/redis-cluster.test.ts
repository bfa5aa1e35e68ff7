import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunId } from "../../src/ids.js";
import { hostToolQueueName, jobIdFor, stepQueueNames } from "../../src/queue/job-types.js";
import { hostIdOf } from "../../src/config.js";
import { mcpRequestQueueName } from "../../src/mcp/mcp-request.js";
import { webhookQueueName } from "../../src/webhooks/webhook-queue.js";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { freePort } from "../helpers/free-port.js";
import { expectValidHistory } from "../helpers/history.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { sample } from "../helpers/prometheus-text.js";
import { redisClusterUnavailable, startRedisCluster, type RedisCluster } from "../helpers/redis-cluster.js";
import { readSse } from "../helpers/sse-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * SPEC W4: the durable core (runs with tool calls, approvals, SSE resume, cancel, fencing) on a
 * real three-node Redis Cluster this file starts from the installed redis-server, with the step
 * queue in four shards and sharded pub/sub. Skipped, saying why, only where redis-server (or
 * redis-cli) is not installed.
 */
const unavailable = await redisClusterUnavailable();
if (unavailable) console.warn(`W4 Redis Cluster tests skipped: ${unavailable}`);

const shards = 4;

describe.skipIf(unavailable !== undefined)(
  unavailable ? `on a Redis Cluster (skipped: ${unavailable})` : "the durable core on a 3-node Redis Cluster",
  () => {
    let cluster: RedisCluster;
    let env: TestEnv;
    let client: ApiClient;
    let baseUrl: string;
    const processes: FoyaProcess[] = [];
    const clusterEnv = () => ({ REDIS_URL: cluster.url, FOYA_REDIS_CLUSTER: "true", FOYA_STEP_QUEUE_SHARDS: String(shards) });

    beforeAll(async () => {
      cluster = await startRedisCluster();
      env = await createTestEnv(clusterEnv());
      await env.startWorker();
      baseUrl = (await env.startServer()).url;
      client = await env.newTenant();
    }, 120_000);
    afterAll(async () => {
      for (const child of processes) child.kill("SIGKILL");
      await Promise.all(processes.map((child) => child.exited));
      await env?.close();
      await cluster?.stop();
    });

    /** A key's (or shard channel's) slot, as Redis computes it. */
    async function slotOf(key: string): Promise<number> {
      return Number(await cluster.node(cluster.ports[0]!).call("CLUSTER", "KEYSLOT", key));
    }

    /** The port of the master serving a slot. */
    async function nodeOfSlot(slot: number): Promise<number> {
      for (const port of cluster.ports) {
        const shardsInfo = (await cluster.node(port).call("CLUSTER", "SLOTS")) as Array<[number, number, [string, number]]>;
        const owner = shardsInfo.find(([from, to]) => slot >= from && slot <= to);
        if (owner) return owner[2][1];
      }
      throw new Error(`no node serves slot ${slot}`);
    }

    it("W4: a turn with tool calls runs to completion; each run's step jobs stay in the one shard its id picks", async () => {
      const runs: RunId[] = [];
      for (let i = 0; i < 6; i++) {
        const { sessionId } = await client.newSession();
        const run = await client.startRun(
          sessionId,
          script([
            [
              { tool: "noop", args: {} },
              { tool: "noop", args: {} },
            ],
            [{ tool: "noop", args: {} }],
            [{ text: "done" }],
          ]),
        );
        runs.push(run.body.id);
      }
      for (const runId of runs) expect((await client.waitForRun(runId, 30_000)).status).toBe("completed");
      const { dispatcher } = env.services;
      for (const runId of runs) {
        for (let stepIndex = 0; stepIndex < 3; stepIndex++) {
          const job = await dispatcher.stepQueueFor(runId).getJob(jobIdFor(runId, { kind: "step", stepIndex }, 0));
          expect(job?.data).toMatchObject({ runId, stepIndex });
        }
        const calls = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [runId]);
        expect(calls.map((call) => call.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
      }
      // Six runs over four shards: more than one shard was used.
      expect(new Set(runs.map((runId) => dispatcher.stepQueueFor(runId).name)).size).toBeGreaterThan(1);
    });

    it("W4: an approval is asked, decided, and the run goes on from where it parked", async () => {
      const { sessionId } = await client.newSession({ approvalMode: "manual" });
      const workspace = await env.workspaceOf(sessionId);
      const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "w4-approve" } }], [{ text: "ok" }]]));
      const [approval] = await waitFor(
        async () => {
          const listed = await client.get(`/v1/approvals?status=pending&runId=${run.body.id}`);
          return listed.body.approvals.length >= 1 ? listed.body.approvals : null;
        },
        20_000,
        "the pending approval",
      );
      const approved = await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" });
      expect(approved.status).toBe(200);
      expect((await client.waitForRun(run.body.id, 30_000)).status).toBe("completed");
      expect(await readMarkers(workspace, "w4-approve")).toHaveLength(1);
      expectValidHistory(await client.messages(sessionId));
    });

    it("W4: an SSE client that resumes with Last-Event-ID gets no gap and no duplicate; the events go over sharded pub/sub", async () => {
      const { sessionId } = await client.newSession();
      const url = `${baseUrl}/v1/sessions/${sessionId}/events`;
      // Held open for the whole run, so the process's subscription to the session stays while the nodes are asked.
      const watching = readSse(url, client.key, { until: (event) => event.event === "run_end", timeoutMs: 40_000 });
      const first = readSse(url, client.key, { until: (_, all) => all.length >= 5 });
      const chatty = script(
        [
          [
            { text: "a".repeat(40), chunks: 40 },
            { tool: "noop", args: {} },
          ],
          [{ text: "b".repeat(40), chunks: 40 }],
        ],
        { chunkDelayMs: 15 },
      );
      const run = await client.startRun(sessionId, chatty);

      // The session's channel is a shard channel of the node that owns its slot; no node has a plain channel of this prefix.
      const channel = `${env.config.redis.queuePrefix}:events:{${sessionId}}`;
      const owner = await nodeOfSlot(await slotOf(channel));
      await waitFor(
        async () => ((await cluster.node(owner).call("PUBSUB", "SHARDCHANNELS", channel)) as string[]).includes(channel),
        10_000,
        "the session's shard channel on the node owning its slot",
      );
      for (const port of cluster.ports) {
        expect(await cluster.node(port).call("PUBSUB", "CHANNELS", `${env.config.redis.queuePrefix}:*`)).toEqual([]);
      }

      const before = await first;
      const lastSeen = Number(before.at(-1)!.id);
      await waitFor(async () => (await client.events(sessionId)).length >= lastSeen + 10, 20_000, "events appended while away");
      const after = await readSse(url, client.key, { lastEventId: lastSeen, until: (event) => event.event === "run_end" });
      const seqs = [...before, ...after].map((event) => Number(event.id));
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      const stored = await client.events(sessionId);
      expect(stored.map((event) => event.seq)).toEqual(seqs);
      // The live stream saw every event too, in order.
      const live = (await watching).map((event) => Number(event.id));
      expect(live).toEqual(seqs);
      expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    });

    it("W4: cancel ends the run and reaches the worker running the tool, which stops it", async () => {
      const { sessionId } = await client.newSession();
      const workspace = await env.workspaceOf(sessionId);
      const run = await client.startRun(
        sessionId,
        script([[{ text: "thinking" }, { tool: "marker_sleep", args: { marker: "w4-cancel", sleepMs: 60_000 } }]]),
      );
      await waitFor(async () => (await readMarkers(workspace, "w4-cancel")).length === 1, 20_000, "the tool to start");
      const cancelled = await client.post(`/v1/runs/${run.body.id}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.status).toBe("cancelled");
      const calls = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [run.body.id]);
      expect(calls).toEqual([{ status: "cancelled" }]);
      // The 60 s tool was aborted by the broadcast cancel: its job ends long before the tool would.
      await env.settled(15_000);
      expectValidHistory(await client.messages(sessionId));
    });

    it("W4: a stalled worker process that wakes up cannot commit over newer work (fencing)", async () => {
      // An environment without an in-process worker: only the two worker processes below take its jobs.
      const fencing = await createTestEnv(clusterEnv());
      try {
        const tenant = await fencing.newTenant();
        const start = async (extra: Record<string, string> = {}) => {
          const child = await startFoyaProcess("worker", { ...fencing.env, ...extra });
          processes.push(child);
          return child;
        };
        const stalled = await start({ FOYA_METRICS_PORT: String(await freePort()), LOG_LEVEL: "warn" });
        const metricsUrl = (await stalled.waitForOutput(/FOYA_METRICS_URL=(\S+)/))[1]!;
        const { sessionId } = await tenant.newSession();
        const workspace = await fencing.workspaceOf(sessionId);
        const run = await tenant.startRun(
          sessionId,
          script([[{ tool: "marker_sleep", args: { marker: "w4-stall", sleepMs: 1500 } }], [{ text: "never" }]]),
        );
        await waitFor(async () => (await readMarkers(workspace, "w4-stall")).length === 1, 20_000, "the tool to start");
        // Frozen mid-tool: its lease and BullMQ lock lapse while the tool is "still running".
        process.kill(stalled.pid, "SIGSTOP");
        try {
          await start();
          expect((await tenant.waitForRun(run.body.id, 30_000)).status).toBe("interrupted");
        } finally {
          process.kill(stalled.pid, "SIGCONT");
        }
        // The woken worker finishes its tool and tries to commit: refused, its job ends.
        await waitFor(
          async () => (sample(await (await fetch(metricsUrl)).text(), "foya_job_duration_seconds_count", { queue: "tools" }) ?? 0) >= 1,
          30_000,
          "the woken job to end",
        ).catch((error: Error) => {
          throw new Error(`${error.message}; the woken worker's log:\n${stalled.output()}`);
        });
        const [call] = await fencing.query<{ status: string }>("select status from tool_calls where run_id = $1", [run.body.id]);
        expect(call!.status).toBe("interrupted");
        const events = await tenant.events(sessionId);
        expect(events.filter((event) => event.type === "tool_end")).toHaveLength(1);
        expect(events.filter((event) => event.type === "run_end")).toHaveLength(1);
        expect((await tenant.messages(sessionId)).map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
      } finally {
        for (const child of processes.splice(0)) {
          child.kill("SIGKILL");
          await child.exited;
        }
        await fencing.close();
      }
    }, 120_000);

    it("W4: every key of one queue shares one slot, and the queues and step shards spread over slots and nodes", async () => {
      const prefix = env.config.redis.queuePrefix;
      const toolQueue = hostToolQueueName(hostIdOf(env.config));
      const names = [...stepQueueNames(shards), toolQueue, webhookQueueName, mcpRequestQueueName];
      expect(names).toContain("{steps-3}");
      // Asked of Redis itself: one slot per queue, a different one for each.
      const slots = await Promise.all(names.map((name) => slotOf(`${prefix}:${name}:wait`)));
      expect(new Set(slots).size).toBe(names.length);
      expect(new Set(await Promise.all(slots.map(nodeOfSlot))).size).toBe(cluster.ports.length);

      // Every key BullMQ wrote for this file's queues: grouped by queue, one slot per group.
      const keys: string[] = [];
      for (const port of cluster.ports) {
        let cursor = "0";
        do {
          const [next, found] = await cluster.node(port).scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
          cursor = next;
          keys.push(...found);
        } while (cursor !== "0");
      }
      const slotsByQueue = new Map<string, Set<number>>();
      for (const key of keys) {
        const queue = /^[^:]+:(\{[^}]+\}):/.exec(key)?.[1];
        if (!queue || !names.includes(queue)) continue;
        slotsByQueue.set(queue, (slotsByQueue.get(queue) ?? new Set()).add(await slotOf(key)));
      }
      expect(slotsByQueue.get(toolQueue)?.size).toBe(1);
      expect([...slotsByQueue.keys()].filter((queue) => queue.startsWith("{steps-")).length).toBeGreaterThan(1);
      for (const [queue, queueSlots] of slotsByQueue) expect([queue, queueSlots.size]).toEqual([queue, 1]);
    });
  },
);
