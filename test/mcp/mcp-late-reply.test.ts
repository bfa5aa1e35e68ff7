import { DelayedError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/ids.js";
import type { McpServerConfig } from "../../src/mcp/mcp-config.js";
import { createMcpConnectionsViaWorkers } from "../../src/mcp/mcp-connections-via-workers.js";
import { mcpRequestQueueName } from "../../src/mcp/mcp-request.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * BullMQ's `Queue.remove` answers 1 for a job that no longer exists, as for one it withdrew. A
 * worker that finished a request, its reply stored, just before the API withdrew the request
 * must not have its answer turned into `no_worker`. The worker here stores the reply without
 * the pub/sub notice (as when the notice is lost while the subscriber reconnects), so the API
 * sees no notice within its pickup window and withdraws a job that is already gone.
 *
 * A request its tenant's share held back is gone too when a worker took it after its deadline
 * (a worker drops such a job without a reply): the API must still say the share was full.
 */
let env: TestEnv;
let connection: Redis;
let worker: Worker;
const heldOnce = new Set<string>();

beforeAll(async () => {
  env = await createTestEnv();
  const prefix = env.config.redis.queuePrefix;
  connection = new Redis(env.config.redis.url, { maxRetriesPerRequest: null });
  worker = new Worker(
    mcpRequestQueueName,
    async (job, token) => {
      if (job.data.server === "held") {
        // Held back once for its tenant's share, then taken again and dropped without a reply, as past its deadline.
        if (!heldOnce.has(String(job.id))) {
          heldOnce.add(String(job.id));
          await job.moveToDelayed(Date.now() + 500, token);
          throw new DelayedError();
        }
        return;
      }
      const reply = { ok: true, value: { resources: [{ uri: "marker://late", name: "late" }] } };
      await env.services.redis.set(`${prefix}:mcp-reply:{${job.id}}`, JSON.stringify(reply), "PX", 60_000);
    },
    { connection, prefix, removeOnComplete: { count: 0 } },
  );
  await worker.waitUntilReady();
});

afterAll(async () => {
  await worker?.close();
  connection?.disconnect();
  await env?.close();
});

/** Lists the resources of the server `name` through the workers, with the API's timing. */
async function listResourcesOf(name: string, timing: { timeoutMs: number; pickupMs: number }) {
  const connections = createMcpConnectionsViaWorkers({
    connection: env.services.redis,
    bus: env.services.bus,
    prefix: env.config.redis.queuePrefix,
    ...timing,
  });
  try {
    return await connections.listResources({ tenantId: newId("ten"), projectId: null }, { name } as McpServerConfig);
  } finally {
    await connections.close();
  }
}

describe("MCP requests asked of workers", () => {
  it("M2: a reply stored by a worker that finished before the API withdrew its request is answered, not lost as no_worker", async () => {
    const outcome = await listResourcesOf("late", { timeoutMs: 5_000, pickupMs: 300 });
    expect(outcome).toEqual({ ok: true, value: { resources: [{ uri: "marker://late", name: "late" }] } });
  });

  it("M3, X5: a request held back for its tenant's share and dropped by a worker past its deadline says the share was full, not that no worker runs", async () => {
    const outcome = await listResourcesOf("held", { timeoutMs: 1_500, pickupMs: 300 });
    expect(outcome).toMatchObject({ ok: false, errorCode: "mcp_busy" });
  });
});
