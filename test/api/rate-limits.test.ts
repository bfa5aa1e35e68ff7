import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

const rateLimit = 5;
/** Failures of one credential from one address, and of every credential from one address. */
const authFailureLimit = 3;
const authFailureAddressLimit = 6;
const metricsToken = "test-metrics-token";

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
    FOYA_API_AUTH_FAILURE_ADDRESS_LIMIT: String(authFailureAddressLimit),
    FOYA_API_AUTH_FAILURE_WINDOW_MS: "60000",
  });
  directUrl = (await direct.startServer()).url;
  proxied = await createTestEnv({
    FOYA_API_AUTH_FAILURE_LIMIT: String(authFailureLimit),
    FOYA_API_AUTH_FAILURE_ADDRESS_LIMIT: String(authFailureAddressLimit),
    FOYA_API_AUTH_FAILURE_WINDOW_MS: "60000",
    FOYA_API_TRUST_PROXY_HOPS: "1",
    FOYA_METRICS_TOKEN: metricsToken,
  });
  proxiedUrl = (await proxied.startServer()).url;
});
afterAll(async () => {
  await direct?.close();
  await proxied?.close();
});

/** Every "this key was genuine" mark of an environment, as if each had expired. */
async function forgetKnownKeys(env: TestEnv): Promise<void> {
  const keys = await env.services.redis.keys(`${env.config.redis.queuePrefix}:limits:auth-known:*`);
  if (keys.length > 0) await env.services.redis.del(...keys);
}

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
    expect(await direct.services.redis.get(`${direct.config.redis.queuePrefix}:limits:requests:{${keyId}}`)).toBe("5");
  });
});

describe("failed-authentication lockout", () => {
  const nat = { "x-forwarded-for": "203.0.113.5" };
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

  it("S10: behind one NAT, a client rotating garbage keys is locked out while the other clients' valid keys keep working, on every API instance", async () => {
    const clients = await Promise.all(["one", "two", "three"].map((name) => proxied.newTenant(name)));
    for (let i = 0; i < authFailureAddressLimit; i++) {
      expect((await get(proxiedUrl, "/v1/projects/prj_x", { ...nat, ...bearer(`foya_guess_${i}`) })).status).toBe(401);
    }
    const locked = await get(proxiedUrl, "/v1/projects/prj_x", { ...nat, ...bearer("foya_guess_more") });
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe("auth_locked_out");
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(locked.retryAfter)).toBeLessThanOrEqual(60);

    // Everyone else behind the same address, with keys that authenticated before or were issued, works as before.
    for (const client of clients) {
      expect((await get(proxiedUrl, "/v1/webhooks", { ...nat, ...bearer(client.key) })).status).toBe(200);
    }
    // The counts are Redis's, not the process's: another API instance sees the same lock and the same keys.
    const otherInstance = (await proxied.startServer()).url;
    expect((await get(otherInstance, "/v1/webhooks", { ...nat, ...bearer("foya_guess_elsewhere") })).status).toBe(429);
    for (const client of clients) {
      expect((await get(otherInstance, "/v1/webhooks", { ...nat, ...bearer(client.key) })).status).toBe(200);
    }
    // A key is refused there before it is looked up: a valid key nobody vouched for (its mark expired after 30 idle
    // days) waits for the window at this address, as every key did before.
    const idle = await proxied.newTenant("idle");
    await forgetKnownKeys(proxied);
    expect((await get(proxiedUrl, "/v1/webhooks", { ...nat, ...bearer(idle.key) })).status).toBe(429);
    // Another address is untouched by all of it.
    expect((await get(proxiedUrl, "/v1/webhooks", { "x-forwarded-for": "203.0.113.6", ...bearer(idle.key) })).status).toBe(200);
  });

  it("S10: one credential failing again and again from one address is locked out there, without locking the address", async () => {
    const address = { "x-forwarded-for": "203.0.113.20" };
    const revoked = "foya_revoked_key_still_configured";
    for (let i = 0; i < authFailureLimit; i++)
      expect((await get(proxiedUrl, "/v1/webhooks", { ...address, ...bearer(revoked) })).status).toBe(401);
    expect((await get(proxiedUrl, "/v1/webhooks", { ...address, ...bearer(revoked) })).body.error.code).toBe("auth_locked_out");
    // From another address the same key is looked at again; from this one, another key is too.
    expect((await get(proxiedUrl, "/v1/webhooks", { "x-forwarded-for": "203.0.113.21", ...bearer(revoked) })).status).toBe(401);
    expect((await get(proxiedUrl, "/v1/webhooks", { ...address, ...bearer("foya_another_wrong_key") })).status).toBe(401);
  });

  it("S10: on the direct socket too, a guessing neighbour leaves a valid key working; X-Forwarded-For is the client's to write and changes nothing", async () => {
    const tenant = await direct.newTenant("neighbour");
    for (let i = 0; i < authFailureAddressLimit; i++) {
      expect((await get(directUrl, "/v1/projects/prj_x", bearer(`foya_guess_${i}`))).status).toBe(401);
    }
    expect((await get(directUrl, "/v1/projects/prj_x", bearer("foya_guess_more"))).status).toBe(429);
    expect((await get(directUrl, "/v1/projects/prj_x", { ...bearer("foya_guess_more"), "x-forwarded-for": "192.0.2.99" })).status).toBe(
      429,
    );
    expect((await get(directUrl, "/v1/webhooks", bearer(tenant.key))).status).toBe(200);
  });

  it("S10: wrong admin tokens are locked out per address; past the address's limit even the right one waits there, since letting it through would confirm a guess", async () => {
    const guesser = { "x-forwarded-for": "198.51.100.7" };
    for (let i = 0; i < authFailureAddressLimit; i++) {
      expect((await get(proxiedUrl, "/v1/tenants/ten_x", { ...guesser, ...bearer(`not-the-admin-token-${i}`) })).status).toBe(401);
    }
    const locked = await get(proxiedUrl, "/v1/tenants/ten_x", { ...guesser, ...bearer("not-the-admin-token-again") });
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe("auth_locked_out");
    expect(locked.retryAfter).not.toBeNull();
    expect((await get(proxiedUrl, "/v1/tenants/ten_x", { ...guesser, ...bearer("test-admin-token") })).status).toBe(429);
    // The client's own entry is the proxy's, the rightmost; what the client put before it does not matter.
    const otherClient = await get(proxiedUrl, "/v1/tenants/ten_x", {
      ...bearer("test-admin-token"),
      "x-forwarded-for": "198.51.100.7, 198.51.100.8",
    });
    expect(otherClient.status).toBe(404);
    // Kinds of credential are counted apart: tenants behind the guesser's address are not locked out by it.
    const tenant = await proxied.newTenant("behind the proxy");
    expect((await get(proxiedUrl, "/v1/webhooks", { ...guesser, ...bearer(tenant.key) })).status).toBe(200);
  });

  it("S10: wrong /metrics tokens are counted and locked out like every other credential", async () => {
    const scraper = { "x-forwarded-for": "198.51.100.30" };
    const guesser = { "x-forwarded-for": "198.51.100.31" };
    for (let i = 0; i < authFailureAddressLimit; i++) {
      expect((await get(proxiedUrl, "/metrics", { ...guesser, ...bearer(`not-the-metrics-token-${i}`) })).status).toBe(401);
    }
    const locked = await get(proxiedUrl, "/metrics", { ...guesser, ...bearer("not-the-metrics-token-again") });
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe("auth_locked_out");
    expect((await get(proxiedUrl, "/metrics", { ...guesser, ...bearer(metricsToken) })).status).toBe(429);
    // One token repeated locks its pair after the per-credential limit.
    for (let i = 0; i < authFailureLimit; i++)
      expect((await get(proxiedUrl, "/metrics", { ...scraper, ...bearer("stale-token") })).status).toBe(401);
    expect((await get(proxiedUrl, "/metrics", { ...scraper, ...bearer("stale-token") })).status).toBe(429);
    const scraped = await fetch(`${proxiedUrl}/metrics`, { headers: { ...scraper, ...bearer(metricsToken) } });
    expect(scraped.status).toBe(200);
    // Tenants behind the guesser's address are not locked out by its metrics guesses.
    const tenant = await proxied.newTenant("behind the scraper");
    expect((await get(proxiedUrl, "/v1/webhooks", { ...guesser, ...bearer(tenant.key) })).status).toBe(200);
  });
});
