import { describe, expect, it } from "vitest";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv();

describe("requests", () => {
  it("rejects invalid bodies with a clear 400 and writes nothing", async () => {
    const { sessionId, projectId } = await client.newSession();
    const cases: Array<[string, string, unknown]> = [
      ["POST", `/v1/sessions/${sessionId}/runs`, {}],
      ["POST", `/v1/sessions/${sessionId}/runs`, { input: "" }],
      ["POST", `/v1/sessions/${sessionId}/runs`, { input: "x", ifActive: "sometimes" }],
      ["POST", `/v1/sessions/${sessionId}/runs`, { input: "x", extra: true }],
      ["POST", "/v1/sessions", { projectId, approvalMode: "yolo" }],
      ["POST", "/v1/sessions", { projectId, providerProfile: "not-configured" }],
      ["POST", "/v1/projects", { name: 42 }],
    ];
    for (const [method, path, body] of cases) {
      const response = await client.request(method, path, body);
      expect(response.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(response.body.error.code).toBe("bad_request");
      expect(response.body.error.message.length).toBeGreaterThan(3);
    }
    const malformed = await env.app.request(`/v1/sessions/${sessionId}/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${client.key}`, "content-type": "application/json" },
      body: "{not json",
    });
    expect(malformed.status).toBe(400);
    expect((await env.query("select id from runs")).length).toBe(0);
  });

  it("answers 404 with the error shape for unknown ids and routes", async () => {
    for (const path of ["/v1/runs/run_nope", "/v1/sessions/ses_nope", "/v1/projects/prj_nope", "/v1/nothing-here"]) {
      const response = await client.get(path);
      expect(response.status, path).toBe(404);
      expect(response.body.error.code).toBe("not_found");
    }
  });

  it("serves an OpenAPI 3.1 document generated from the route schemas", async () => {
    const response = await env.app.request("/openapi.json");
    expect(response.status).toBe(200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(document.openapi).toBe("3.1.0");
    for (const path of [
      "/v1/tenants",
      "/v1/projects",
      "/v1/projects/{id}",
      "/v1/sessions",
      "/v1/sessions/{id}",
      "/v1/sessions/{id}/runs",
      "/v1/sessions/{id}/messages",
      "/v1/sessions/{id}/events",
      "/v1/runs/{id}",
      "/v1/runs/{id}/cancel",
      "/v1/tools",
      "/v1/approvals",
      "/v1/approvals/{id}",
      "/v1/policy",
      "/v1/projects/{id}/policy",
      "/v1/webhooks",
      "/v1/mcp-servers",
      "/v1/mcp-servers/{id}",
      "/v1/projects/{id}/mcp/{server}/resources",
      "/v1/projects/{id}/mcp/{server}/resources/read",
      "/v1/projects/{id}/mcp/{server}/prompts",
      "/v1/projects/{id}/mcp/{server}/prompts/{prompt}",
      "/healthz",
      "/readyz",
    ]) {
      expect(document.paths[path], path).toBeDefined();
    }
    expect(Object.keys(document.paths["/v1/sessions/{id}"]!)).toEqual(expect.arrayContaining(["get", "delete"]));
  });

  it("S7: reports liveness, the readiness of Postgres and Redis, and how tool processes are confined (identity, rlimits or cgroups)", async () => {
    expect((await env.app.request("/healthz")).status).toBe(200);
    const ready = await env.app.request("/readyz");
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { details: { confinement: Record<string, string> } };
    expect(body).toMatchObject({ status: "ok", checks: { postgres: "ok", redis: "ok" } });
    const { confinement } = body.details;
    expect(confinement.identity).toMatch(
      process.getuid?.() === 0 ? new RegExp(`^per-tenant uids from ${env.config.sandbox.toolUidBase + 1}`) : /^the service's own uid/,
    );
    expect(confinement.limits).toMatch(/^rlimits per process \(memory 4294967296 bytes of address space, 512 processes per tenant uid/);
    expect(confinement.limits).toMatch(/cgroup v2: not used \(/);
    expect(confinement.sandbox).toMatch(/^bubblewrap at \//);
    expect(confinement.network).toMatch(/^slirp4netns at \//);
  });

  it("R3: GET /v1/tools shows the registry as the session sees it", async () => {
    const { sessionId } = await client.newSession({ toolAllowList: ["read", "noop"] });
    const tools = (await client.get(`/v1/tools?session=${sessionId}`)).body.tools as Array<{ name: string; exposedNow: boolean }>;
    expect(tools.map((t) => t.name)).toEqual([
      "agent",
      "bash",
      "command_cancel",
      "command_output",
      "command_status",
      "context_echo",
      "delete",
      "edit",
      "end_batch",
      "grep",
      "history_read_tool_result",
      "late_progress",
      "list",
      "make_image",
      "marker_sleep",
      "net_probe",
      "noop",
      "probe",
      "read",
      "rich_result",
      "show_diff",
      "tool_search",
      "update_tasks",
      "web_fetch",
      "write",
    ]);
    expect(tools.filter((t) => t.exposedNow).map((t) => t.name)).toEqual(["noop", "read"]);
    const readOnly = await client.newSession({ runMode: "read_only" });
    const visible = (await client.get(`/v1/tools?session=${readOnly.sessionId}`)).body.tools as Array<{
      name: string;
      exposedNow: boolean;
    }>;
    expect(visible.filter((t) => t.exposedNow).map((t) => t.name)).toEqual([
      "agent",
      "command_output",
      "command_status",
      "context_echo",
      "end_batch",
      "grep",
      "late_progress",
      "list",
      "make_image",
      "noop",
      "probe",
      "read",
      "rich_result",
      "show_diff",
      "update_tasks",
    ]);
  });
});
