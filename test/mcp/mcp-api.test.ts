import { createRequire } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ProjectId, TenantId } from "../../src/ids.js";
import { waitFor } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { groupAlive, sandboxedMcpOverrides } from "./mcp-test-helpers.js";

const require = createRequire(import.meta.url);
const everythingEntry = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");

// The API asks the in-process worker for listings, resources and prompts; `env.services.mcp` is that worker's.
const { env, client } = useTestEnv({ worker: true, overrides: { ...sandboxedMcpOverrides, FOYA_MCP_ALLOW_PRIVATE: "true" } });

function everythingTransport(envVars: Record<string, string> = {}) {
  return { kind: "stdio", command: process.execPath, args: [everythingEntry, "stdio"], env: envVars };
}

async function newProject(api = client): Promise<ProjectId> {
  const project = await api.post<{ id: ProjectId }>("/v1/projects", { name: "mcp project" });
  expect(project.status).toBe(201);
  return project.body.id;
}

describe("MCP servers through the API", () => {
  it("M2: resources and prompts of a project's MCP server through the API", async () => {
    const projectId = await newProject();
    const created = await client.post("/v1/mcp-servers", {
      name: "everything",
      projectId,
      transport: everythingTransport(),
      startupTimeoutMs: 30_000,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "everything",
      projectId,
      transport: { kind: "stdio", envNames: [] },
      startupTimeoutMs: 30_000,
      callTimeoutMs: null,
      deferTools: null,
    });
    expect(created.body.id).toMatch(/^mcp_/);

    const resources = await client.get(`/v1/projects/${projectId}/mcp/everything/resources`);
    expect(resources.status).toBe(200);
    expect(resources.body.resources.length).toBeGreaterThan(0);
    const doc = resources.body.resources.find((r: { uri: string }) => r.uri.endsWith("architecture.md"));
    expect(doc).toMatchObject({ name: "architecture.md", mimeType: "text/markdown" });

    const read = await client.get(`/v1/projects/${projectId}/mcp/everything/resources/read?uri=${encodeURIComponent(doc.uri)}`);
    expect(read.status).toBe(200);
    expect(read.body.contents).toHaveLength(1);
    expect(read.body.contents[0]).toMatchObject({ uri: doc.uri, mimeType: "text/markdown" });
    expect(read.body.contents[0].text).toContain("Architecture");

    const blob = await client.get(
      `/v1/projects/${projectId}/mcp/everything/resources/read?uri=${encodeURIComponent("demo://resource/dynamic/blob/1")}`,
    );
    expect(blob.status).toBe(200);
    expect(blob.body.contents[0]).toMatchObject({ mimeType: "text/plain" });
    expect(Buffer.from(blob.body.contents[0].blob, "base64").toString("utf8")).toContain("Resource 1");

    const prompts = await client.get(`/v1/projects/${projectId}/mcp/everything/prompts`);
    expect(prompts.status).toBe(200);
    const argsPrompt = prompts.body.prompts.find((p: { name: string }) => p.name === "args-prompt");
    expect(argsPrompt.arguments).toEqual(expect.arrayContaining([expect.objectContaining({ name: "city", required: true })]));

    const prompt = await client.post(`/v1/projects/${projectId}/mcp/everything/prompts/args-prompt`, {
      arguments: { city: "Paris", state: "IDF" },
    });
    expect(prompt.status).toBe(200);
    expect(prompt.body.messages).toEqual([{ role: "user", content: { type: "text", text: expect.stringContaining("Paris, IDF") } }]);

    // The server refuses an unknown prompt: a 502 with the library's error code.
    const unknownPrompt = await client.post(`/v1/projects/${projectId}/mcp/everything/prompts/no-such-prompt`, {});
    expect(unknownPrompt.status).toBe(502);
    expect(unknownPrompt.body.error.code).toBe("mcp_request_failed");

    // Unknown server name: 404.
    const unknownServer = await client.get(`/v1/projects/${projectId}/mcp/nothing/resources`);
    expect(unknownServer.status).toBe(404);

    // Deleting the configuration stops its server process group on the worker that runs it.
    const status = env.services.mcp.status({ tenantId: await tenantOf(projectId), projectId }, "everything");
    expect(status.state).toBe("connected");
    const deleted = await client.delete(`/v1/mcp-servers/${created.body.id}`);
    expect(deleted.status).toBe(204);
    expect(status.pid).toBeTypeOf("number");
    await waitFor(async () => !groupAlive(status.pid as number), 10_000, "the deleted server's process group to end");
    expect((await client.get(`/v1/mcp-servers/${created.body.id}`)).status).toBe(404);
    expect((await client.get(`/v1/projects/${projectId}/mcp/everything/prompts`)).status).toBe(404);
  });

  it("M2: a project sees the tenant-wide server, and its own server of the same name first", async () => {
    const projectId = await newProject();
    const otherProjectId = await newProject();
    const tenantWide = await client.post("/v1/mcp-servers", { name: "shared", transport: everythingTransport() });
    expect(tenantWide.status).toBe(201);
    expect(tenantWide.body.projectId).toBeNull();
    const own = await client.post("/v1/mcp-servers", {
      name: "shared",
      projectId,
      transport: { kind: "http", url: "http://127.0.0.1:9/mcp" },
      startupTimeoutMs: 2_000,
    });
    expect(own.status).toBe(201);

    // The other project uses the tenant-wide stdio server.
    const viaTenant = await client.get(`/v1/projects/${otherProjectId}/mcp/shared/prompts`);
    expect(viaTenant.status).toBe(200);
    expect(viaTenant.body.prompts.length).toBeGreaterThan(0);
    // This project uses its own (unreachable) server: a 502 with the library's message.
    const viaOwn = await client.get(`/v1/projects/${projectId}/mcp/shared/prompts`);
    expect(viaOwn.status).toBe(502);
    expect(viaOwn.body.error.code).toBe("mcp_unavailable");
    expect(viaOwn.body.error.message).toContain('"shared"');

    const listed = await client.get(`/v1/mcp-servers?projectId=${otherProjectId}`);
    expect(listed.body.servers.map((s: { id: string }) => s.id)).toContain(tenantWide.body.id);
    expect(listed.body.servers.map((s: { id: string }) => s.id)).not.toContain(own.body.id);

    expect((await client.delete(`/v1/mcp-servers/${tenantWide.body.id}`)).status).toBe(204);
    expect((await client.delete(`/v1/mcp-servers/${own.body.id}`)).status).toBe(204);
  });

  it("M1: server configs never show env or header values", async () => {
    const stdio = await client.post("/v1/mcp-servers", {
      name: "secretive",
      transport: everythingTransport({ API_TOKEN: "stdio-secret-value", OTHER_KEY: "second-secret" }),
    });
    expect(stdio.status).toBe(201);
    const http = await client.post("/v1/mcp-servers", {
      name: "remote",
      transport: { kind: "http", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer header-secret-value" } },
    });
    expect(http.status).toBe(201);
    expect(stdio.body.transport.envNames).toEqual(["API_TOKEN", "OTHER_KEY"]);
    expect(http.body.transport).toEqual({ kind: "http", url: "https://mcp.example.com/mcp", headerNames: ["Authorization"] });

    const answers = [
      stdio,
      http,
      await client.get("/v1/mcp-servers"),
      await client.get(`/v1/mcp-servers/${stdio.body.id}`),
      await client.get(`/v1/mcp-servers/${http.body.id}`),
    ];
    for (const answer of answers) {
      const body = JSON.stringify(answer.body);
      for (const secret of ["stdio-secret-value", "second-secret", "header-secret-value"]) expect(body).not.toContain(secret);
    }
    const listed = await client.get("/v1/mcp-servers");
    expect(listed.body.servers.map((s: { name: string }) => s.name)).toEqual(expect.arrayContaining(["secretive", "remote"]));
    for (const server of listed.body.servers) {
      expect(server.transport).not.toHaveProperty("env");
      expect(server.transport).not.toHaveProperty("headers");
    }
    // Stored as configured, for the connection manager.
    const [row] = await env.query<{ transport: { env: Record<string, string> } }>("select transport from mcp_servers where id = $1", [
      stdio.body.id,
    ]);
    expect(row?.transport.env.API_TOKEN).toBe("stdio-secret-value");
  });

  it("D8: another tenant cannot see or use a tenant's MCP servers", async () => {
    const projectId = await newProject();
    const created = await client.post("/v1/mcp-servers", { name: "mine", projectId, transport: everythingTransport() });
    expect(created.status).toBe(201);
    const other = await env.newTenant("other tenant");

    expect((await other.get(`/v1/mcp-servers/${created.body.id}`)).status).toBe(404);
    expect((await other.delete(`/v1/mcp-servers/${created.body.id}`)).status).toBe(404);
    expect((await other.get("/v1/mcp-servers")).body.servers).toEqual([]);
    for (const path of ["resources", "resources/read?uri=demo%3A%2F%2Fresource%2Fdynamic%2Ftext%2F1", "prompts"]) {
      const answer = await other.get(`/v1/projects/${projectId}/mcp/mine/${path}`);
      expect(answer.status, path).toBe(404);
      expect(answer.body.error.code).toBe("not_found");
    }
    expect((await other.post(`/v1/projects/${projectId}/mcp/mine/prompts/simple-prompt`, {})).status).toBe(404);
    // Nor configure a server on the tenant's project.
    expect((await other.post("/v1/mcp-servers", { name: "intruder", projectId, transport: everythingTransport() })).status).toBe(404);
    // Another tenant's own project does not see it either.
    const otherProject = await newProject(other);
    expect((await other.get(`/v1/projects/${otherProject}/mcp/mine/prompts`)).status).toBe(404);
    // Still there for its owner.
    expect((await client.get(`/v1/mcp-servers/${created.body.id}`)).status).toBe(200);
    expect((await client.delete(`/v1/mcp-servers/${created.body.id}`)).status).toBe(204);
  });

  it("validates server configs (400) and refuses a duplicate name in the same scope (409)", async () => {
    const invalid: Array<[string, unknown]> = [
      ["bad name", { name: "Bad Name", transport: everythingTransport() }],
      ["name too long", { name: "a".repeat(41), transport: everythingTransport() }],
      ["empty command", { name: "x", transport: { kind: "stdio", command: "  " } }],
      ["bad env name", { name: "x", transport: { kind: "stdio", command: "node", env: { "1BAD": "v" } } }],
      ["env name with dash", { name: "x", transport: { kind: "stdio", command: "node", env: { "A-B": "v" } } }],
      ["ftp url", { name: "x", transport: { kind: "http", url: "ftp://example.com/mcp" } }],
      ["file url", { name: "x", transport: { kind: "http", url: "file:///etc/passwd" } }],
      ["not a url", { name: "x", transport: { kind: "http", url: "not a url" } }],
      ["unknown kind", { name: "x", transport: { kind: "sse", url: "https://example.com" } }],
      ["bad header name", { name: "x", transport: { kind: "http", url: "https://example.com", headers: { "Bad Header": "v" } } }],
      ["host path cwd", { name: "x", transport: { kind: "stdio", command: "node", cwd: "/etc" } }],
      ["zero timeout", { name: "x", transport: everythingTransport(), callTimeoutMs: 0 }],
    ];
    for (const [what, body] of invalid) {
      const answer = await client.post("/v1/mcp-servers", body);
      expect(answer.status, what).toBe(400);
      expect(answer.body.error.code, what).toBe("bad_request");
    }
    expect((await client.post("/v1/mcp-servers", { name: "x", projectId: "prj_nope", transport: everythingTransport() })).status).toBe(404);

    const projectId = await newProject();
    const first = await client.post("/v1/mcp-servers", { name: "dup", transport: everythingTransport() });
    expect(first.status).toBe(201);
    const again = await client.post("/v1/mcp-servers", { name: "dup", transport: { kind: "http", url: "https://example.com/mcp" } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("conflict");
    // The same name in a project scope is another scope; twice there is a conflict.
    expect((await client.post("/v1/mcp-servers", { name: "dup", projectId, transport: everythingTransport() })).status).toBe(201);
    expect((await client.post("/v1/mcp-servers", { name: "dup", projectId, transport: everythingTransport() })).status).toBe(409);
    // Another tenant may use the name.
    const other = await env.newTenant("third tenant");
    expect((await other.post("/v1/mcp-servers", { name: "dup", transport: everythingTransport() })).status).toBe(201);
  });

  it("M3: closing the services stops every MCP server process their worker started for the API", async () => {
    const projectId = await newProject();
    const created = await client.post("/v1/mcp-servers", { name: "last", transport: everythingTransport() });
    expect(created.status).toBe(201);
    expect((await client.get(`/v1/projects/${projectId}/mcp/last/prompts`)).status).toBe(200);
    const status = env.services.mcp.status({ tenantId: await tenantOf(projectId), projectId: null }, "last");
    expect(status.state).toBe("connected");
    expect(status.pid).toBeTypeOf("number");
    expect(groupAlive(status.pid as number)).toBe(true);
    // What env.close() does through services.close(); closing twice is harmless.
    await env.services.mcp.close();
    expect(groupAlive(status.pid as number)).toBe(false);
  });
});

async function tenantOf(projectId: ProjectId): Promise<TenantId> {
  const [row] = await env.query<{ tenant_id: TenantId }>("select tenant_id from projects where id = $1", [projectId]);
  if (!row) throw new Error(`no project ${projectId}`);
  return row.tenant_id;
}
