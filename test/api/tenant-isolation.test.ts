import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, type ApiClient } from "../helpers/api-client.js";
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
      const concrete = template.replace(/\{[^}]+\}/g, (name) => (name === "{entryId}" ? "00000000-0000-4000-8000-000000000000" : "abc_0123456789abcdef"));
      for (const method of Object.keys(operations)) {
        const response = await env.app.request(concrete, { method: method.toUpperCase(), headers: { "content-type": "application/json" }, ...(method === "get" || method === "delete" ? {} : { body: "{}" }) });
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
