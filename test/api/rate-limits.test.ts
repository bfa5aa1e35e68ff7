import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

const rateLimit = 5;
const authFailureLimit = 3;

/** Tiny limits; the socket's address is the client (no proxy trusted). */
let direct: TestEnv;
let directUrl: string;
/** Behind one trusted proxy: the client is the last X-Forwarded-For entry. */
let proxied: TestEnv;
let proxiedUrl: string;

beforeAll(async () => {
  direct = await createTestEnv({
    FOYA_API_RATE_LIMIT: String(rateLimit),
    FOYA_API_RATE_WINDOW_MS: "60000",
    FOYA_API_AUTH_FAILURE_LIMIT: String(authFailureLimit),
    FOYA_API_AUTH_FAILURE_WINDOW_MS: "60000",
  });
  directUrl = (await direct.startServer()).url;
  proxied = await createTestEnv({ FOYA_API_AUTH_FAILURE_LIMIT: String(authFailureLimit), FOYA_API_TRUST_PROXY_HOPS: "1" });
  proxiedUrl = (await proxied.startServer()).url;
});
afterAll(async () => {
  await direct?.close();
  await proxied?.close();
});

function get(baseUrl: string, path: string, headers: Record<string, string>) {
  return fetch(`${baseUrl}${path}`, { headers }).then(async (response) => ({
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: (await response.json()) as { error: { code: string; message: string } },
  }));
}

describe("per-key rate limits", () => {
  it("S10: past the limit a key gets 429 rate_limited with Retry-After, while another tenant's key is unaffected", async () => {
    const first = await direct.newTenant("first");
    const second = await direct.newTenant("second");
    for (let i = 0; i < rateLimit; i++) expect((await first.get("/v1/webhooks")).status).toBe(200);
    const limited = await direct.app.request("/v1/webhooks", { headers: { authorization: `Bearer ${first.key}` } });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await limited.json()).toEqual({ error: { code: "rate_limited", message: expect.stringContaining(`${rateLimit} requests`) } });

    expect((await second.get("/v1/webhooks")).status).toBe(200);
    // Over real HTTP too: the count lives in Redis, not in the app instance.
    const viaServer = await get(directUrl, "/v1/webhooks", { authorization: `Bearer ${first.key}` });
    expect(viaServer.status).toBe(429);
    expect(viaServer.retryAfter).not.toBeNull();
  });

  it("S10: the limit is shared by every API instance of the deployment (one Redis counter)", async () => {
    const tenant = await direct.newTenant("shared");
    const { createApp } = await import("../../src/api/app.js");
    const otherInstance = ApiClient.forApp(createApp(direct.services), tenant.key);
    for (let i = 0; i < rateLimit; i++) expect((await (i % 2 === 0 ? tenant : otherInstance).get("/v1/webhooks")).status).toBe(200);
    expect((await otherInstance.get("/v1/webhooks")).status).toBe(429);
    expect((await tenant.get("/v1/webhooks")).status).toBe(429);
  });

  it("S10: every route but health and the document is behind a key or the admin token, and counts once per request", async () => {
    const document = (await (await direct.app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    const publicPaths = new Set(["/healthz", "/readyz"]);
    for (const [template, methods] of Object.entries(document.paths)) {
      if (publicPaths.has(template)) continue;
      const path = template
        .replace(/\{id\}/g, "ses_x")
        .replace(/\{server\}/g, "srv")
        .replace(/\{prompt\}/g, "p");
      for (const method of Object.keys(methods)) {
        const response = await direct.app.request(path, { method: method.toUpperCase() });
        expect(response.status, `${method} ${template}`).toBe(401);
      }
    }
    const tenant = await direct.newTenant("counted");
    for (const path of ["/v1/projects", "/v1/sessions/ses_x", "/v1/webhooks", "/v1/approvals", "/v1/mcp-servers"]) await tenant.get(path);
    const keyId = (await direct.query<{ id: string }>("select id from api_keys where tenant_id = $1", [tenant.tenantId]))[0]!.id;
    expect(await direct.services.redis.get(`${direct.config.redis.queuePrefix}:limits:requests:${keyId}`)).toBe("5");
  });
});

describe("failed-authentication lockout", () => {
  it("S10: after too many unknown keys from one address, that address gets 429 auth_locked_out, even with a valid key", async () => {
    const tenant = await direct.newTenant("locked");
    for (let i = 0; i < authFailureLimit; i++) {
      expect((await get(directUrl, "/v1/projects/prj_x", { authorization: `Bearer foya_guess_${i}` })).status).toBe(401);
    }
    const locked = await get(directUrl, "/v1/projects/prj_x", { authorization: "Bearer foya_guess_more" });
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe("auth_locked_out");
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(locked.retryAfter)).toBeLessThanOrEqual(60);
    // The key is not even looked at: a right guess would look the same as a wrong one.
    expect((await get(directUrl, "/v1/webhooks", { authorization: `Bearer ${tenant.key}` })).status).toBe(429);
    // X-Forwarded-For is the client's to write, so without a trusted proxy it changes nothing.
    expect((await get(directUrl, "/v1/webhooks", { authorization: `Bearer ${tenant.key}`, "x-forwarded-for": "192.0.2.99" })).status).toBe(
      429,
    );
    // Another address (here: in-process requests) is unaffected.
    expect((await tenant.get("/v1/webhooks")).status).toBe(200);
  });

  it("S10: wrong admin tokens count too, per client address behind a trusted proxy", async () => {
    const guesser = { authorization: "Bearer not-the-admin-token", "x-forwarded-for": "198.51.100.7" };
    for (let i = 0; i < authFailureLimit; i++) expect((await get(proxiedUrl, "/v1/tenants/ten_x", guesser)).status).toBe(401);
    const locked = await get(proxiedUrl, "/v1/tenants/ten_x", guesser);
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe("auth_locked_out");
    expect(locked.retryAfter).not.toBeNull();
    const adminFromGuesser = await get(proxiedUrl, "/v1/tenants/ten_x", { ...guesser, authorization: "Bearer test-admin-token" });
    expect(adminFromGuesser.status).toBe(429);
    // The client's own entry is the proxy's, the rightmost; what the client put before it does not matter.
    const otherClient = await get(proxiedUrl, "/v1/tenants/ten_x", {
      authorization: "Bearer test-admin-token",
      "x-forwarded-for": "198.51.100.7, 198.51.100.8",
    });
    expect(otherClient.status).toBe(404);
    const tenant = await proxied.newTenant("behind the proxy");
    expect(
      (await get(proxiedUrl, "/v1/webhooks", { authorization: `Bearer ${tenant.key}`, "x-forwarded-for": "198.51.100.9" })).status,
    ).toBe(200);
  });
});
