import { describe, expect, it } from "vitest";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv();

/** Sends a raw JSON text, so escapes such as \u0000 and \ud800 reach the server as written. */
async function sendRaw(method: string, path: string, json: string) {
  const response = await env.app.request(path, {
    method,
    headers: { authorization: `Bearer ${client.key}`, "content-type": "application/json" },
    body: json,
  });
  return { status: response.status, body: (await response.json()) as { error: { code: string; message: string } } };
}

function expectRefused(response: { status: number; body: any }, what: string, mentions?: string) {
  expect(response.status, what).toBe(400);
  expect(response.body.error.code, what).toBe("bad_request");
  if (mentions) expect(response.body.error.message, what).toContain(mentions);
}

describe("string parameters Postgres cannot store", () => {
  it("S10: NUL in projectId of POST /v1/sessions answers 400, never 500", async () => {
    const { projectId } = await client.newSession();
    expectRefused(await client.post("/v1/sessions", { projectId: `${projectId}\u0000` }), "NUL after a real id", "projectId");
    expectRefused(await client.post("/v1/sessions", { projectId: "\u0000" }), "NUL alone", "projectId");
    expectRefused(await sendRaw("POST", "/v1/sessions", `{"projectId":"prj_\\u0000x"}`), "NUL escape in the raw body", "projectId");
    expectRefused(
      await client.post("/v1/sessions", { projectId, providerProfile: "scripted\u0000" }),
      "NUL in providerProfile",
      "providerProfile",
    );
  });

  it("S10: NUL in the query parameters ?sessionId=, ?runId=, ?session= and ?projectId= answers 400", async () => {
    const { sessionId } = await client.newSession();
    for (const path of [
      "/v1/approvals?sessionId=%00",
      `/v1/approvals?sessionId=${sessionId}%00`,
      "/v1/approvals?status=pending&runId=run_%00",
      "/v1/tools?session=%00",
      `/v1/tools?session=${sessionId}%00`,
      "/v1/mcp-servers?projectId=%00",
      "/v1/mcp-servers?projectId=prj_a%00b",
    ]) {
      expectRefused(await client.get(path), path);
    }
    // The same parameters with real values still work.
    expect((await client.get(`/v1/approvals?sessionId=${sessionId}`)).status).toBe(200);
    expect((await client.get(`/v1/tools?session=${sessionId}`)).status).toBe(200);
  });

  it("S10: NUL in an id path parameter answers 400, on every kind of route", async () => {
    for (const [method, path] of [
      ["GET", "/v1/sessions/%00"],
      ["GET", "/v1/sessions/ses_%00x"],
      ["DELETE", "/v1/sessions/ses_%00x"],
      ["GET", "/v1/runs/run_%00"],
      ["POST", "/v1/runs/run_%00/cancel"],
      ["GET", "/v1/projects/prj_%00"],
      ["GET", "/v1/projects/prj_%00/policy"],
      ["GET", "/v1/file-changes/fch_%00"],
      ["GET", "/v1/commands/cmd_%00"],
      ["GET", "/v1/approvals/apr_%00"],
      ["GET", "/v1/webhooks/whk_%00"],
      ["GET", "/v1/artifacts/art_%00"],
      ["GET", "/v1/mcp-servers/mcp_%00"],
      ["GET", "/v1/projects/prj_x/mcp/%00/prompts"],
    ] as const) {
      expectRefused(await client.request(method, path, method === "POST" ? {} : undefined), `${method} ${path}`);
    }
    // Ids of another shape are refused the same way, and well-formed unknown ids still answer 404.
    expectRefused(await client.get("/v1/sessions/not-an-id"), "not an id", "id");
    expect((await client.get("/v1/sessions/ses_nope")).status).toBe(404);
  });

  it("S10: NUL or an unpaired surrogate anywhere in a JSON body, object keys included, answers 400", async () => {
    const { sessionId } = await client.newSession();
    expectRefused(await sendRaw("POST", "/v1/projects", `{"name":"a\\ud800b"}`), "lone surrogate in a name", "name");
    expectRefused(await sendRaw("POST", `/v1/sessions/${sessionId}/runs`, `{"input":"hi\\u0000"}`), "NUL in run input", "input");
    // Routes whose schemas say nothing about NUL are covered by the generic check.
    expectRefused(
      await client.request("PUT", "/v1/policy", { rules: { allow: ["bash(echo \u0000)"] } }),
      "NUL in a policy rule",
      "rules.allow.0",
    );
    expectRefused(
      await client.post("/v1/approvals/apr_nope", { decision: "approve", arguments: { "pa\u0000th": "x" } }),
      "NUL in a key",
      "body.arguments",
    );
    expectRefused(
      await client.post("/v1/approvals/apr_nope", { decision: "approve", arguments: { path: ["ok", "\udc00"] } }),
      "deep surrogate",
      "body.arguments.path.1",
    );
    expect((await env.query("select id from runs")).length).toBe(0);
  });
});
