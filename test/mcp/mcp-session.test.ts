import http from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { TenantId } from "../../src/ids.js";
import { script, textOf, waitFor, type ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";
import { createLogger } from "../../src/logger.js";
import { createMcpConnections } from "../../src/mcp/mcp-connections.js";
import { createToolCatalog } from "../../src/mcp/tool-catalog.js";
import { groupAlive, sandboxedMcpOverrides, testStdioCommands } from "./mcp-test-helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const everythingEntry = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");
const faultyEntry = path.join(here, "fixtures/faulty-server.mjs");

const { env, client } = useTestEnv({
  worker: true,
  fullAccess: true,
  overrides: { ...sandboxedMcpOverrides, FOYA_MCP_CONFIG_TTL_MS: "0", FOYA_MCP_ALLOW_PRIVATE: "true" },
});

/** A Streamable HTTP MCP server built with the SDK: stateless, one server per request, behind a header check. */
async function startHttpMcpServer(token: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.headers["x-token"] !== token) {
      res.writeHead(401).end();
      return;
    }
    const mcp = new McpServer({ name: "remote", version: "1.0.0" });
    mcp.registerTool(
      "multiply",
      { description: "Multiplies two numbers.", inputSchema: { a: z.number(), b: z.number() }, annotations: { readOnlyHint: true } },
      async ({ a, b }) => ({ content: [{ type: "text", text: `product=${a * b}` }] }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void mcp.close());
    void mcp
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
const httpServers: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(httpServers.map((server) => server.close()));
});

const stdio = (entry: string, args: string[] = [], envVars: Record<string, string> = {}) => ({
  kind: "stdio",
  command: process.execPath,
  args: [entry, ...args],
  env: envVars,
});

async function addServer(api: ApiClient, body: Record<string, unknown>): Promise<void> {
  const created = await api.post("/v1/mcp-servers", body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
}

describe("MCP tools in sessions", () => {
  it("M1: a project's stdio server's tools run in its sessions like built-in tools; images go to the artifact store; get-env shows no worker secret", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "full_access" });
    await addServer(client, {
      name: "everything",
      projectId,
      transport: stdio(everythingEntry, ["stdio"], { FOYA_MCP_PROBE: "configured-value" }),
    });

    const listed = await client.get(`/v1/tools?session=${sessionId}`);
    expect(listed.status).toBe(200);
    const echo = listed.body.tools.find((t: { name: string }) => t.name === "mcp__everything__echo");
    expect(echo).toMatchObject({
      exposure: "direct",
      sideEffect: "read",
      exposedNow: true,
      parameters: { type: "object", properties: { message: expect.any(Object) } },
    });

    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "mcp__everything__echo", args: { message: "hello from foya" } },
          { tool: "mcp__everything__get_sum", args: { a: 2, b: 40 } },
        ],
        [{ tool: "mcp__everything__get_tiny_image", args: {} }],
        [{ tool: "mcp__everything__get_env", args: {} }],
        [{ tool: "mcp__everything__trigger_long_running_operation", args: { duration: 1, steps: 2 } }],
        [{ text: "done" }],
      ]),
    );
    expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
    expectValidHistory(await client.messages(sessionId));
    const [echoed, sum, image, envDump, longOp] = await client.toolMessages(sessionId);
    expect(echoed).toMatchObject({ name: "mcp__everything__echo", status: "succeeded", isError: false });
    expect(textOf(echoed)).toContain("hello from foya");
    expect(textOf(sum)).toContain("42");
    const imagePart = image.content.find((part: { type: string }) => part.type === "image");
    expect(imagePart).toMatchObject({ artifactId: expect.stringMatching(/^art_/), mediaType: "image/png" });
    const meta = await client.get(`/v1/artifacts/${imagePart.artifactId}/meta`);
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({ mediaType: "image/png", size: expect.any(Number) });
    expect(textOf(envDump)).toContain("configured-value");
    expect(textOf(envDump)).not.toContain("DATABASE_URL");
    expect(textOf(envDump)).not.toContain(env.env.DATABASE_URL);
    expect(textOf(envDump)).not.toContain("FOYA_ADMIN_TOKEN");
    expect(longOp).toMatchObject({ status: "succeeded", isError: false });

    const events = await client.events(sessionId);
    const firstStep = events.find((e) => e.type === "step_start");
    expect(firstStep.data.tools).toContain("mcp__everything__echo");
    // The schema list is sorted by name (R2): built-ins and MCP tools in one order.
    expect([...firstStep.data.tools].sort()).toEqual(firstStep.data.tools);
    expect(events.some((e) => e.type === "tool_update" && typeof e.data.progress === "string")).toBe(true);
  });

  it("M1: a tenant-wide Streamable HTTP server's tools run in the tenant's sessions, with the configured headers", async () => {
    const remote = await startHttpMcpServer("sesame");
    httpServers.push(remote);
    const tenant = await env.newTenant();
    await addServer(tenant, { name: "remote", transport: { kind: "http", url: remote.url, headers: { "X-Token": "sesame" } } });
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const run = await tenant.startRun(sessionId, script([[{ tool: "mcp__remote__multiply", args: { a: 6, b: 7 } }], [{ text: "done" }]]));
    expect((await tenant.waitForRun(run.body.id)).status).toBe("completed");
    const [product] = await tenant.toolMessages(sessionId);
    expect(product).toMatchObject({ name: "mcp__remote__multiply", status: "succeeded" });
    expect(textOf(product)).toBe("product=42");
    // Schema violations are refused before the server is asked (T5).
    const bad = await tenant.startRun(sessionId, script([[{ tool: "mcp__remote__multiply", args: { a: "six" } }], [{ text: "ok" }]]));
    expect((await tenant.waitForRun(bad.body.id)).status).toBe("completed");
    const messages = await tenant.toolMessages(sessionId);
    expect(messages[1]).toMatchObject({ status: "failed", isError: true });
    expect(textOf(messages[1])).toContain("do not match the schema");
  });

  it("M1: a server's deferred tools are found by tool_search and become callable from the next step", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "full_access" });
    await addServer(client, { name: "everything", projectId, transport: stdio(everythingEntry, ["stdio"]), deferTools: true });
    const listed = (await client.get(`/v1/tools?session=${sessionId}`)).body.tools;
    expect(listed.find((t: { name: string }) => t.name === "mcp__everything__echo")).toMatchObject({
      exposure: "deferred",
      exposedNow: false,
    });
    expect(listed.find((t: { name: string }) => t.name === "tool_search")).toMatchObject({ exposedNow: true });

    const run = await client.startRun(
      sessionId,
      script([
        [{ tool: "tool_search", args: { query: "mcp__everything__echo", limit: 1 } }],
        [{ tool: "mcp__everything__echo", args: { message: "found me" } }],
        [{ text: "done" }],
      ]),
    );
    expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
    const [search, echoed] = await client.toolMessages(sessionId);
    expect(textOf(search)).toContain("mcp__everything__echo");
    expect(echoed).toMatchObject({ name: "mcp__everything__echo", status: "succeeded" });
    expect(textOf(echoed)).toContain("found me");
  });

  it("M1: a process stops a server whose configuration was deleted once it reads its project's servers again", async () => {
    // A catalog and connections of their own, as in a worker process (the test's API shares the in-process worker's).
    const mcp = createMcpConnections({ logger: createLogger("silent"), stdioCommands: testStdioCommands });
    const base = { registry: env.services.tools, executor: env.services.executor };
    const catalog = createToolCatalog({
      base,
      baseTools: env.services.tools.list(),
      store: env.services.store,
      mcp,
      logger: createLogger("silent"),
      configTtlMs: 0,
    });
    try {
      const { projectId } = await client.newSession();
      const created = await client.post("/v1/mcp-servers", { name: "faulty", projectId, transport: stdio(faultyEntry) });
      const [owner] = await env.query<{ tenant_id: TenantId }>("select tenant_id from projects where id = $1", [projectId]);
      const tenantId = owner!.tenant_id;
      const before = await catalog.forProject({ tenantId, projectId });
      expect(before.registry.get("mcp__faulty__ok")).toBeDefined();
      const pid = mcp.status({ tenantId, projectId }, "faulty").pid;
      expect(pid).toBeGreaterThan(0);

      expect((await client.delete(`/v1/mcp-servers/${created.body.id}`)).status).toBe(204);
      const after = await catalog.forProject({ tenantId, projectId });
      expect(after.registry.get("mcp__faulty__ok")).toBeUndefined();
      await waitFor(async () => !groupAlive(pid!), 10_000, "the deleted server to stop");
    } finally {
      await mcp.close();
    }
  });

  it("M1: another tenant's sessions neither see nor reach a tenant's MCP server", async () => {
    const { projectId } = await client.newSession();
    await addServer(client, { name: "private", projectId, transport: stdio(faultyEntry) });
    await addServer(client, { name: "tenantwide", transport: stdio(faultyEntry) });
    const other = await env.newTenant("tenant", { fullAccess: true });
    const { sessionId } = await other.newSession({ approvalMode: "full_access" });
    const listed = await other.get(`/v1/tools?session=${sessionId}`);
    expect(listed.body.tools.filter((t: { name: string }) => t.name.startsWith("mcp__"))).toEqual([]);
    const run = await other.startRun(
      sessionId,
      script([
        [
          { tool: "mcp__private__ok", args: {} },
          { tool: "mcp__tenantwide__ok", args: {} },
        ],
        [{ text: "done" }],
      ]),
    );
    expect((await other.waitForRun(run.body.id)).status).toBe("completed");
    const messages = await other.toolMessages(sessionId);
    expect(messages.map((m) => m.status)).toEqual(["failed", "failed"]);
    expect(textOf(messages[0])).toContain("No tool named");

    // The tenant's own other project sees the tenant-wide server but not the first project's.
    const own = await client.newSession({ approvalMode: "full_access" });
    const ownTools = (await client.get(`/v1/tools?session=${own.sessionId}`)).body.tools.map((t: { name: string }) => t.name);
    expect(ownTools).toContain("mcp__tenantwide__ok");
    expect(ownTools).not.toContain("mcp__private__ok");
  });

  it("S5: an MCP tool marked destructive asks in Auto mode; its read-only sibling runs without asking", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "auto" });
    await addServer(client, { name: "faulty", projectId, transport: stdio(faultyEntry) });
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "mcp__faulty__ok", args: {} },
          { tool: "mcp__faulty__drop_table", args: { table: "users" } },
        ],
        [{ text: "done" }],
      ]),
    );
    const approval = await waitFor(
      async () => (await client.get(`/v1/approvals?status=pending&runId=${run.body.id}`)).body.approvals[0],
      30_000,
      "an approval for the destructive tool",
    );
    expect(approval.call).toMatchObject({ tool: "mcp__faulty__drop_table" });
    expect(approval.requestReason).toContain("cannot tell where");
    await waitFor(async () => (await client.get(`/v1/runs/${run.body.id}`)).body.status === "awaiting_approval", 30_000, "the run to park");
    // The read-only call ran already; the destructive one has not.
    const before = await client.toolMessages(sessionId);
    expect(before.map((m) => m.name)).toEqual(["mcp__faulty__ok"]);
    expect(textOf(before[0])).toMatch(/^ok from \d+/);

    expect((await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" })).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const after = await client.toolMessages(sessionId);
    expect(after[1]).toMatchObject({ name: "mcp__faulty__drop_table", status: "succeeded" });
    expect(textOf(after[1])).toBe("dropped users");
  });

  it("M3: a server that crashes mid-call gives the session an is_error result; the run goes on and a later call reconnects", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "full_access" });
    await addServer(client, { name: "faulty", projectId, transport: stdio(faultyEntry) });
    const run = await client.startRun(sessionId, script([[{ tool: "mcp__faulty__crash", args: {} }], [{ text: "noted" }]]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const [crashed] = await client.toolMessages(sessionId);
    expect(crashed).toMatchObject({ status: "failed", isError: true });
    expect(textOf(crashed)).toContain("exited with code 3");

    // After the backoff, the server is started again for the next call.
    const again = await waitFor(
      async () => {
        const next = await client.startRun(sessionId, script([[{ tool: "mcp__faulty__ok", args: {} }], [{ text: "fine" }]]));
        await client.waitForRun(next.body.id);
        const messages = await client.toolMessages(sessionId);
        const last = messages[messages.length - 1];
        return last.status === "succeeded" ? last : null;
      },
      30_000,
      "a reconnected server",
    );
    expect(textOf(again)).toMatch(/^ok from \d+/);
    expectValidHistory(await client.messages(sessionId));
  });
});
