import path from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, type ApiClient } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { hostIdOf } from "../../src/config.js";
import { hostMcpRequestQueueName } from "../../src/mcp/mcp-request.js";
import { sandboxedMcpOverrides } from "./mcp-test-helpers.js";

// The API's MCP requests are served from a worker's slots (FOYA_MCP_REQUEST_CONCURRENCY); each tenant
// gets a share of them (FOYA_MCP_REQUEST_TENANT_CONCURRENCY, here the default: half of 2, so 1), so one
// tenant's slow server cannot hold every slot, and a listing that could not be had is said, never dropped.
const here = path.dirname(fileURLToPath(import.meta.url));
const listingEntry = path.join(here, "fixtures/listing-server.mjs");
const { env, client } = useTestEnv({
  worker: true,
  overrides: {
    ...sandboxedMcpOverrides,
    FOYA_MCP_REQUEST_CONCURRENCY: "2",
    FOYA_MCP_REQUEST_PICKUP_MS: "1500",
    FOYA_MCP_REQUEST_TIMEOUT_MS: "8000",
    FOYA_MCP_CONFIG_TTL_MS: "0",
  },
});

let requests: Queue;
beforeAll(() => {
  // Project servers' requests go to the queue of the host their project is placed on (SPEC W3): the one worker's.
  requests = new Queue(hostMcpRequestQueueName(hostIdOf(env.config)), {
    connection: env.services.redis,
    prefix: env.config.redis.queuePrefix,
  });
});
afterAll(async () => {
  await requests?.close();
});

interface Listing {
  tools: Array<{ name: string }>;
  mcpServers: Array<{ name: string; status: string; error?: { code: string; message: string } }>;
}

/** A session whose project has one stdio server named `name` (the listing fixture, with `args`). */
async function sessionWithServer(tenant: ApiClient, name: string, args: string[] = []): Promise<string> {
  const { projectId, sessionId } = await tenant.newSession();
  const created = await tenant.post("/v1/mcp-servers", {
    name,
    projectId,
    transport: { kind: "stdio", command: process.execPath, args: [listingEntry, ...args] },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return sessionId;
}

describe("M3, X5: a tenant's share of the workers' MCP request slots", () => {
  it("M3, X5: one tenant's slow server holds its share only; another tenant's listing still answers, and the slow tenant's listing says its server could not answer, never an empty list", async () => {
    const slowSession = await sessionWithServer(client, "slow", ["--hang-tools"]);
    const other = await env.newTenant("other");
    const quickSession = await sessionWithServer(other, "quick");

    // Two listings of the slow tenant at once: its server never answers them.
    const slowListings = [client.get<Listing>(`/v1/tools?session=${slowSession}`), client.get<Listing>(`/v1/tools?session=${slowSession}`)];
    // It holds every slot it can get: both (no share), or its share with the rest held back in the queue.
    await waitFor(
      async () => {
        const counts = await requests.getJobCounts("active", "delayed");
        return counts.active === 2 || (counts.active === 1 && (counts.delayed ?? 0) >= 1);
      },
      20_000,
      "the slow tenant's listings to hold the slots they can",
    );

    const quick = await other.get<Listing>(`/v1/tools?session=${quickSession}`);
    expect(quick.status).toBe(200);
    expect(quick.body.mcpServers).toEqual([{ name: "quick", projectId: expect.any(String), status: "listed" }]);
    expect(quick.body.tools.map((tool) => tool.name)).toContain("mcp__quick__ping");

    for (const answer of await Promise.all(slowListings)) {
      expect(answer.status).toBe(200);
      const [slow] = answer.body.mcpServers;
      expect(slow).toMatchObject({ name: "slow", status: "unavailable", error: { code: expect.stringMatching(/^mcp_(timeout|busy)$/) } });
      expect(slow?.error?.message).toContain('"slow"');
      expect(answer.body.tools.map((tool) => tool.name)).not.toContain("mcp__slow__ping");
      // The service's own tools are still listed.
      expect(answer.body.tools.map((tool) => tool.name)).toContain("read");
    }

    // Nothing else changed: the other tenant's server still answers once the slow listings ended.
    const again = await other.get<Listing>(`/v1/tools?session=${quickSession}`);
    expect(again.body.mcpServers).toEqual([{ name: "quick", projectId: expect.any(String), status: "listed" }]);
  });
});
