import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProjectId, TenantId } from "../../src/ids.js";
import { ApiClient, waitFor } from "../helpers/api-client.js";
import { processGroup, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";
import { sandboxedMcpOverrides } from "./mcp-test-helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const listingEntry = path.join(here, "fixtures/listing-server.mjs");

// Short enough for a test, long enough for a sandboxed server to start on a busy host.
const pickupMs = 1_500;
const timeoutMs = 6_000;

let env: TestEnv;
let api: FoyaProcess;
let owner: ApiClient;
let projectId: ProjectId;
const processes = processGroup();

/** Real processes: an API-only process (src/api/main.ts) and, from the second test on, a worker process. */
beforeAll(async () => {
  env = await createTestEnv({
    ...sandboxedMcpOverrides,
    FOYA_MCP_REQUEST_PICKUP_MS: String(pickupMs),
    FOYA_MCP_REQUEST_TIMEOUT_MS: String(timeoutMs),
  });
  const tenant = await env.newTenant("owner");
  api = await processes.start("api", env.env);
  owner = ApiClient.forUrl(api.url as string, tenant.key, tenant.tenantId);
  const project = await owner.post<{ id: ProjectId }>("/v1/projects", { name: "mcp project" });
  expect(project.status).toBe(201);
  projectId = project.body.id;
});
afterAll(async () => {
  await processes.killAll();
  await env?.close();
});

/** A stdio server of the project whose processes carry `token` on their command lines. */
async function addListingServer(name: string, token: string): Promise<void> {
  const created = await owner.post("/v1/mcp-servers", {
    name,
    projectId,
    transport: { kind: "stdio", command: process.execPath, args: [listingEntry, token] },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
}

/** Host processes whose command line holds `token` (the server, and the sandbox around it). */
function processesWith(token: string): number[] {
  const pids = readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
  return pids.filter((pid) => pid !== process.pid && (readProc(`/proc/${pid}/cmdline`) ?? "").includes(token));
}

function ancestorsOf(pid: number): number[] {
  const chain: number[] = [];
  for (let current = pid; chain.length < 64; ) {
    const stat = readProc(`/proc/${current}/stat`);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const parent = stat ? Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) : 0;
    if (!parent) break;
    chain.push(parent);
    current = parent;
  }
  return chain;
}

function readProc(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

describe("MCP servers are reached from an API-only process through workers", () => {
  it("E4, M2: an API-only process starts no MCP server: without a worker it answers 503 no_worker within the pickup time, and no server process ran", async () => {
    const token = randomUUID();
    await addListingServer("listing", token);
    const started = Date.now();
    const refused = await owner.get(`/v1/projects/${projectId}/mcp/listing/resources`);
    const elapsed = Date.now() - started;
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.error.code).toBe("no_worker");
    expect(refused.headers.get("retry-after")).toBe("5");
    // A project's server runs on the project's host (SPEC W3): with no live host there is none to wait for.
    expect(elapsed).toBeLessThan(pickupMs + 3_000);
    expect(processesWith(token)).toEqual([]);
    // Withdrawn, so a worker that starts later does not run it for nobody.
    // On the shared queue or a host's (SPEC W3): `{mcp-requests}`, `{mcp-requests-<host>}`.
    expect(await env.services.redis.keys(`${env.config.redis.queuePrefix}:{mcp-requests*:mcp-*`)).toEqual([]);
    // An API-only process confines nothing, so its readiness says nothing about confinement.
    const ready = await fetch(`${api.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ok", checks: { postgres: "ok", redis: "ok" } });
  });

  it("E4, M2: a worker process serves the API-only process's request; the server runs under the worker, not the API", async () => {
    const worker = await processes.start("worker", env.env);
    const token = randomUUID();
    await addListingServer("served", token);
    const served = await owner.get(`/v1/projects/${projectId}/mcp/served/resources`);
    expect(served.status, JSON.stringify(served.body)).toBe(200);
    expect(served.body.resources).toEqual(
      expect.arrayContaining([expect.objectContaining({ uri: "marker://hello", name: "hello", mimeType: "text/plain" })]),
    );
    const read = await owner.get(`/v1/projects/${projectId}/mcp/served/resources/read?uri=${encodeURIComponent("marker://hello")}`);
    expect(read.status).toBe(200);
    expect(read.body.contents).toEqual([{ uri: "marker://hello", mimeType: "text/plain", text: "hello" }]);

    const serverProcesses = processesWith(token);
    expect(serverProcesses.length).toBeGreaterThan(0);
    for (const pid of serverProcesses) {
      const ancestors = ancestorsOf(pid);
      expect(ancestors, `process ${pid}`).toContain(worker.pid);
      expect(ancestors, `process ${pid}`).not.toContain(api.pid);
    }

    // Deleting the configuration through the API stops the server on the worker that runs it.
    const [server] = (await owner.get<{ servers: Array<{ id: string; name: string }> }>("/v1/mcp-servers")).body.servers.filter(
      (s) => s.name === "served",
    );
    expect((await owner.delete(`/v1/mcp-servers/${server?.id}`)).status).toBe(204);
    await waitFor(async () => processesWith(token).length === 0, 10_000, "the deleted server's processes to end");
  });

  it("M2: a request the worker took but the server does not answer ends in 504 mcp_timeout at the API's deadline", async () => {
    await addListingServer("silent", randomUUID());
    // Started first, so the deadline below measures the read alone.
    expect((await owner.get(`/v1/projects/${projectId}/mcp/silent/resources`)).status).toBe(200);
    const started = Date.now();
    const answer = await owner.get(`/v1/projects/${projectId}/mcp/silent/resources/read?uri=${encodeURIComponent("marker://never")}`);
    const elapsed = Date.now() - started;
    expect(answer.status, JSON.stringify(answer.body)).toBe(504);
    expect(answer.body.error.code).toBe("mcp_timeout");
    expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 50);
    expect(elapsed).toBeLessThan(timeoutMs + 3_000);
  });

  it("D8, M2: another tenant gets 404 for a tenant's server, and a request naming the server under another tenant reaches nothing on the worker", async () => {
    const token = randomUUID();
    await addListingServer("isolated", token);
    const otherTenant = await env.newTenant("other");
    const other = ApiClient.forUrl(api.url as string, otherTenant.key, otherTenant.tenantId);
    for (const route of ["resources", `resources/read?uri=${encodeURIComponent("marker://hello")}`, "prompts"]) {
      const answer = await other.get(`/v1/projects/${projectId}/mcp/isolated/${route}`);
      expect(answer.status, route).toBe(404);
      expect(answer.body.error.code, route).toBe("not_found");
    }
    // Past the API's checks, as a forged job would be: the worker looks the server up by the request's tenant.
    const forged = await env.services.mcpViaWorkers.listResources(
      { tenantId: otherTenant.tenantId as TenantId, projectId },
      { name: "isolated", transport: { kind: "http", url: "http://unused.invalid/mcp", headers: {} } },
    );
    expect(forged).toEqual({ ok: false, errorCode: "mcp_unavailable", message: 'The MCP server "isolated" is not configured.' });
    expect(processesWith(token)).toEqual([]);
  });
});
