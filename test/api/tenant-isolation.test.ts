import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let owner: ApiClient;
let stranger: ApiClient;
let ids: { projectId: string; sessionId: string; runId: string };

beforeAll(async () => {
  env = await createTestEnv();
  await env.startWorker();
  owner = await env.newTenant("owner");
  stranger = await env.newTenant("stranger");
  const { projectId, sessionId } = await owner.newSession();
  const run = await owner.startRun(sessionId, script([[{ text: "secret" }]]));
  await owner.waitForRun(run.body.id);
  ids = { projectId, sessionId, runId: run.body.id };
});
afterAll(async () => env?.close());

describe("tenant isolation", () => {
  it("D8: every route with an id, called with another tenant's key, answers 404", async () => {
    const { projectId, sessionId, runId } = ids;
    const calls: Array<[string, string, unknown?]> = [
      ["GET", `/v1/projects/${projectId}`],
      ["GET", `/v1/sessions/${sessionId}`],
      ["DELETE", `/v1/sessions/${sessionId}`],
      ["POST", `/v1/sessions/${sessionId}/runs`, { input: "hijack" }],
      ["GET", `/v1/sessions/${sessionId}/messages`],
      ["GET", `/v1/sessions/${sessionId}/events`],
      ["GET", `/v1/runs/${runId}`],
      ["POST", `/v1/runs/${runId}/cancel`, {}],
      ["GET", `/v1/tools?session=${sessionId}`],
      ["POST", "/v1/sessions", { projectId }],
      ["GET", `/v1/projects/${projectId}/policy`],
      ["PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["bash"] } }],
      ["GET", `/v1/projects/${projectId}/trash`],
      ["POST", `/v1/projects/${projectId}/trash/00000000-0000-4000-8000-000000000000/restore`, {}],
      ["DELETE", `/v1/projects/${projectId}`],
    ];
    for (const [method, path, body] of calls) {
      const response = await stranger.request(method, path, body);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.error.code).toBe("not_found");
    }
    // SSE too.
    const sse = await env.app.request(`/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${stranger.key}`, accept: "text/event-stream" },
    });
    expect(sse.status).toBe(404);
    // The owner still sees everything, untouched.
    expect((await owner.get(`/v1/sessions/${sessionId}`)).body.deleted).toBe(false);
    expect((await owner.get(`/v1/projects/${projectId}`)).status).toBe(200);
    expect((await owner.messages(sessionId)).map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("D8: every path with an id in /openapi.json, with each of its methods, answers 404 to another tenant's key with the owner's real ids", async () => {
    // The owner gets one of everything an id can name: a file change, a command, an approval, an artifact, a trash entry, a webhook, an MCP server.
    const { sessionId } = await owner.newSession({ approvalMode: "manual" });
    const { sessionId: busy } = await owner.newSession();
    const run = await owner.startRun(
      busy,
      script([
        [{ tool: "write", args: { path: "a.txt", content: "one\n" } }],
        [{ tool: "delete", args: { path: "a.txt" } }],
        [{ tool: "bash", args: { command: "sleep 30", background: true } }],
        [{ tool: "make_image", args: {} }],
        [{ text: "done" }],
      ]),
    );
    await owner.waitForRun(run.body.id);
    const waiting = await owner.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "asked" } }], [{ text: "done" }]]));
    const approvalId = await waitFor(
      async () => (await owner.get(`/v1/approvals?status=pending&sessionId=${sessionId}`)).body.approvals?.[0]?.id as string | undefined,
      20_000,
      "the approval",
    );
    const busyProject = (await owner.get(`/v1/sessions/${busy}`)).body.projectId as string;
    const one = async (sql: string) => ((await env.query<{ id: string }>(sql, [owner.tenantId]))[0] ?? { id: undefined }).id;
    const owned: Record<string, string | undefined> = {
      projects: busyProject,
      sessions: busy,
      runs: run.body.id,
      "file-changes": await one("select id from file_changes where tenant_id = $1 limit 1"),
      commands: await one("select id from commands where tenant_id = $1 limit 1"),
      approvals: approvalId,
      artifacts: await one("select id from artifacts where tenant_id = $1 limit 1"),
      webhooks: (await owner.post("/v1/webhooks", { url: "https://example.com/hook", eventTypes: ["run_end"] })).body.webhook?.id,
      "mcp-servers": (
        await owner.post("/v1/mcp-servers", {
          name: "owned",
          projectId: busyProject,
          transport: { kind: "http", url: "https://example.com/mcp" },
        })
      ).body.id,
    };
    const entryId = (await owner.get(`/v1/projects/${busyProject}/trash`)).body.entries?.[0]?.id as string | undefined;
    // A branch of the owner's session, as a rewind leaves one (that session is busy: it cannot rewind now).
    const branchId = "brn_isolation-test";
    await env.query("insert into session_branches (id, tenant_id, session_id, at, message_count) values ($1, $2, $3, $4, 0)", [
      branchId,
      owner.tenantId,
      busy,
      JSON.stringify({ runOrdinal: 1, stepIndex: null }),
    ]);
    for (const [kind, id] of Object.entries({ ...owned, entryId })) expect(id, `the owner's ${kind}`).toBeTruthy();
    // Bodies that pass each route's schema, so the refusal is the ownership check's, not validation's.
    const bodies: Record<string, unknown> = {
      "POST /v1/sessions/{id}/runs": { input: "hijack" },
      "POST /v1/approvals/{id}": { decision: "deny", reason: "not yours" },
      "PUT /v1/projects/{id}/policy": { rules: { allow: ["bash"] } },
      "POST /v1/projects/{id}/mcp/{server}/prompts/{prompt}": { arguments: {} },
      "POST /v1/sessions/{id}/fork": { at: { runId: run.body.id } },
      "POST /v1/sessions/{id}/rewind": { at: { branchId } },
    };
    // Admin routes take the admin token, never a tenant's key (the test below).
    const adminOnly = new Set(["/v1/tenants/{id}"]);
    const document = (await (await env.app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    let checked = 0;
    for (const [template, operations] of Object.entries(document.paths)) {
      if (!template.includes("{") || adminOnly.has(template)) continue;
      const kind = template.split("/")[2] as string;
      const concrete = template.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
        const value =
          name === "id"
            ? owned[kind]
            : name === "entryId"
              ? entryId
              : name === "branchId"
                ? branchId
                : name === "server"
                  ? "owned"
                  : name === "prompt"
                    ? "any"
                    : undefined;
        if (!value) throw new Error(`no owner's id for {${name}} in ${template}: add one to this test`);
        return value;
      });
      for (const method of Object.keys(operations).map((m) => m.toUpperCase())) {
        const body = bodies[`${method} ${template}`] ?? (method === "GET" || method === "DELETE" ? undefined : {});
        const query = template.endsWith("/resources/read") ? "?uri=test%3A%2F%2Fx" : "";
        const response = await stranger.request(method, `${concrete}${query}`, body);
        expect(response.status, `${method} ${template}: ${JSON.stringify(response.body)}`).toBe(404);
        expect(response.body.error.code).toBe("not_found");
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(30);
    // Nothing of the owner's moved: the approval still waits, the file change and the server are there.
    expect((await owner.get(`/v1/approvals/${approvalId}`)).body.status).toBe("pending");
    expect((await owner.get(`/v1/file-changes/${owned["file-changes"]}`)).status).toBe(200);
    expect((await owner.get(`/v1/mcp-servers/${owned["mcp-servers"]}`)).status).toBe(200);
    expect((await owner.get(`/v1/projects/${busyProject}`)).status).toBe(200);
    await owner.post(`/v1/runs/${waiting.body.id}/cancel`, {});
  });

  it("D8: API keys are stored hashed, and a missing or unknown key answers 401", async () => {
    const keys = await env.query<{ key_hash: string }>("select key_hash from api_keys");
    expect(keys.length).toBe(2);
    for (const row of keys) {
      expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row.key_hash).not.toBe(owner.key);
    }
    expect((await owner.withKey("foya_wrong").get(`/v1/sessions/${ids.sessionId}`)).status).toBe(401);
    const anonymous = await env.app.request(`/v1/sessions/${ids.sessionId}`);
    expect(anonymous.status).toBe(401);
  });

  it("D8: every route of the API document but health and the OpenAPI document itself answers 401 without a key", async () => {
    const document = (await (await env.app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    const open = new Set(["/healthz", "/readyz", "/openapi.json"]);
    let checked = 0;
    for (const [template, operations] of Object.entries(document.paths)) {
      if (open.has(template)) continue;
      const concrete = template.replace(/\{[^}]+\}/g, (name) =>
        name === "{entryId}" ? "00000000-0000-4000-8000-000000000000" : "abc_0123456789abcdef",
      );
      for (const method of Object.keys(operations)) {
        const response = await env.app.request(concrete, {
          method: method.toUpperCase(),
          headers: { "content-type": "application/json" },
          ...(method === "get" || method === "delete" ? {} : { body: "{}" }),
        });
        expect(response.status, `${method.toUpperCase()} ${template}`).toBe(401);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(40);
  });

  it("D8: tenant creation and the admin API need the admin token", async () => {
    expect((await owner.post("/v1/tenants", { name: "x" })).status).toBe(401);
    expect((await owner.get("/v1/admin/workers")).status).toBe(401);
    expect((await env.admin.get("/v1/admin/workers")).status).toBe(200);
    expect((await env.admin.post("/v1/tenants", { name: "y" })).status).toBe(201);
  });

  it("D8: every table row carries its tenant", async () => {
    const tables = await env.query<{ table_name: string }>(
      `select table_name from information_schema.tables where table_schema = 'public' and table_name not like '%migrations%'`,
    );
    // The deployment's own tables: tenants themselves, and worker processes (liveness records,
    // read only through the admin API), which serve every tenant.
    const deploymentTables = new Set(["tenants", "workers"]);
    for (const { table_name } of tables) {
      if (deploymentTables.has(table_name)) continue;
      const columns = await env.query<{ column_name: string; is_nullable: string }>(
        "select column_name, is_nullable from information_schema.columns where table_name = $1 and column_name = 'tenant_id'",
        [table_name],
      );
      expect(columns, table_name).toEqual([{ column_name: "tenant_id", is_nullable: "NO" }]);
    }
  });
});
