import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStreamTokens } from "../../src/api/stream-token.js";
import type { ApiKeyId } from "../../src/ids.js";
import type { ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let baseUrl: string;
let tenant: ApiClient;

beforeAll(async () => {
  env = await createTestEnv();
  baseUrl = (await env.startServer()).url;
  tenant = await env.newTenant("console user");
});
afterAll(async () => env?.close());

/** Opens the event stream with nothing but a URL, as EventSource does, and closes it at once. */
async function openWithUrl(path: string): Promise<{ status: number; contentType: string | null; code?: string }> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}${path}`, { headers: { accept: "text/event-stream" }, signal: controller.signal });
  const contentType = response.headers.get("content-type");
  if (response.status === 200) {
    controller.abort();
    return { status: 200, contentType };
  }
  const body = (await response.json()) as { error: { code: string } };
  return { status: response.status, contentType, code: body.error.code };
}

async function mint(client: ApiClient, sessionId: string): Promise<{ status: number; token: string; expiresAt: string }> {
  const response = await client.post<{ token: string; expiresAt: string }>(`/v1/sessions/${sessionId}/stream-tokens`);
  return { status: response.status, ...response.body };
}

describe("event stream tokens (SPEC E3: API keys never travel in URLs)", () => {
  it("E3: a minted token opens its own session's event stream, for about a minute", async () => {
    const { sessionId } = await tenant.newSession();
    const minted = await mint(tenant, sessionId);
    expect(minted.status).toBe(201);
    const lifetime = Date.parse(minted.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(50_000);
    expect(lifetime).toBeLessThanOrEqual(60_000);
    const opened = await openWithUrl(`/v1/sessions/${sessionId}/events?token=${encodeURIComponent(minted.token)}`);
    expect(opened).toMatchObject({ status: 200, contentType: expect.stringContaining("text/event-stream") });
    // JSON pages of the same session too.
    const page = await fetch(`${baseUrl}/v1/sessions/${sessionId}/events?token=${encodeURIComponent(minted.token)}`);
    expect(page.status).toBe(200);
    expect(await page.json()).toMatchObject({ events: [] });
  });

  it("E3: an expired, another session's, forged or differently signed token is refused 401", async () => {
    const { sessionId } = await tenant.newSession();
    const { sessionId: otherSession } = await tenant.newSession();
    const [key] = await env.query<{ id: ApiKeyId }>("select id from api_keys where tenant_id = $1", [tenant.tenantId]);
    const claims = { tenantId: tenant.tenantId!, apiKeyId: key!.id, sessionId };
    const own = createStreamTokens(env.config.api.streamTokenSecret);
    const valid = own.mint(claims).token;
    const [payload, signature] = valid.split(".") as [string, string];
    const otherClaims = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), s: otherSession }),
    ).toString("base64url");
    const refused = {
      expired: own.mint(claims, Date.now() - 61_000).token,
      "another session's": (await mint(tenant, otherSession)).token,
      "claims changed under the signature": `${otherClaims}.${signature}`,
      "signature changed": `${payload}.${signature.startsWith("A") ? "B" : "A"}${signature.slice(1)}`,
      "signed with another secret": createStreamTokens("another secret, long enough to be one").mint(claims).token,
      "no signature": payload,
    };
    for (const [what, token] of Object.entries(refused)) {
      const opened = await openWithUrl(`/v1/sessions/${sessionId}/events?token=${encodeURIComponent(token)}`);
      expect(opened, what).toMatchObject({ status: 401, code: "unauthorized" });
    }
    expect((await openWithUrl(`/v1/sessions/${sessionId}/events?token=${encodeURIComponent(valid)}`)).status).toBe(200);
  });

  it("E3: an API key in the URL authenticates nothing; a token opens no other route", async () => {
    const { sessionId } = await tenant.newSession();
    for (const name of ["token", "key", "api_key", "apiKey", "access_token", "authorization"]) {
      const opened = await openWithUrl(`/v1/sessions/${sessionId}/events?${name}=${encodeURIComponent(tenant.key)}`);
      expect(opened, name).toMatchObject({ status: 401, code: "unauthorized" });
    }
    const { token } = await mint(tenant, sessionId);
    for (const path of [
      `/v1/sessions/${sessionId}`,
      `/v1/sessions/${sessionId}/messages`,
      `/v1/sessions/${sessionId}/file-changes`,
      "/v1/usage",
    ]) {
      const response = await fetch(`${baseUrl}${path}?token=${encodeURIComponent(token)}`);
      expect(response.status, path).toBe(401);
    }
    // Minting needs the key itself, not a token.
    const again = await fetch(`${baseUrl}/v1/sessions/${sessionId}/stream-tokens?token=${encodeURIComponent(token)}`, { method: "POST" });
    expect(again.status).toBe(401);
  });

  it("E3: another tenant cannot mint for a session (404); a revoked key's tokens stop opening streams", async () => {
    const stranger = await env.newTenant("stranger");
    const { sessionId } = await tenant.newSession();
    expect((await mint(stranger, sessionId)).status).toBe(404);

    const leaving = await env.newTenant("leaving");
    const { sessionId: leavingSession } = await leaving.newSession();
    const { token } = await mint(leaving, leavingSession);
    await env.query("update api_keys set revoked_at = now() where tenant_id = $1", [leaving.tenantId]);
    expect((await openWithUrl(`/v1/sessions/${leavingSession}/events?token=${encodeURIComponent(token)}`)).status).toBe(401);
  });
});
