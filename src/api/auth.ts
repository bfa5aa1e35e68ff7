import { createHash, randomBytes } from "node:crypto";
import { sameSecret } from "./same-secret.js";
import type { MiddlewareHandler } from "hono";
import type { Store } from "../store/store.js";
import { FoyaError } from "../errors.js";
import type { AppEnv } from "./app-env.js";
import type { AuthFailureLockout, CredentialScope, PresentedCredential } from "./limits/auth-failure-lockout.js";
import type { StreamTokens } from "./stream-token.js";

function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** What the failed-authentication lockout knows of a presented secret: its scope and digest, never the secret. */
export function presented(scope: CredentialScope, secret: string): PresentedCredential {
  return { scope, digest: hashApiKey(secret) };
}

export function generateApiKey(): { key: string; hash: string; prefix: string } {
  const key = `foya_${randomBytes(24).toString("base64url")}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 12) };
}

function bearer(header: string | undefined): string | null {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

/**
 * Resolves `Authorization: Bearer <key>` to the key's tenant (SPEC D8). A key that failed too
 * often from this address, or an unknown key from an address with too many failures, is
 * refused before it is looked up (SPEC S10).
 */
export function requireApiKey(store: Pick<Store, "apiKeys">, lockout: AuthFailureLockout): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Set only by acceptStreamToken, which runs first on the one route a token may open.
    if (c.get("authenticatedBy") === "stream_token") return next();
    const key = bearer(c.req.header("authorization"));
    if (!key) throw new FoyaError("unauthorized", "send Authorization: Bearer <api key>");
    const credential = presented("tenant", key);
    await lockout.check(c, credential);
    const row = await store.apiKeys.liveApiKeyByHash(credential.digest);
    if (!row) {
      await lockout.record(c, credential);
      throw new FoyaError("unauthorized", "unknown or revoked API key");
    }
    lockout.vouch(credential);
    c.set("tenantId", row.tenantId);
    c.set("apiKeyId", row.id);
    c.set("authenticatedBy", "api_key");
    await next();
  };
}

/**
 * For `GET /v1/sessions/{id}/events` only: a request without an Authorization header may
 * carry `?token=`, a stream token of this very session (src/api/stream-token.ts) minted by a
 * key that is still valid. Anything else in the query, an API key included, authenticates
 * nothing; a bad token counts as a failed attempt (SPEC S10, E3).
 */
export function acceptStreamToken(
  store: Pick<Store, "apiKeys">,
  lockout: AuthFailureLockout,
  tokens: StreamTokens,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const token = c.req.query("token");
    if (c.req.method !== "GET" || token === undefined || c.req.header("authorization") !== undefined) return next();
    const credential = presented("tenant", token);
    // A signature check costs no lookup: a token that holds one passes an address locked by others' failures.
    const claims = tokens.verify(token, c.req.param("id") ?? "");
    await lockout.check(c, credential, { genuine: claims !== null });
    const row = claims ? await store.apiKeys.liveApiKeyOfTenant(claims.tenantId, claims.apiKeyId) : undefined;
    if (!claims || !row) {
      await lockout.record(c, credential);
      throw new FoyaError("unauthorized", "invalid or expired stream token: mint one with POST /v1/sessions/{id}/stream-tokens");
    }
    c.set("tenantId", claims.tenantId);
    c.set("apiKeyId", claims.apiKeyId);
    c.set("authenticatedBy", "stream_token");
    await next();
  };
}

export function requireAdminToken(adminToken: string | undefined, lockout: AuthFailureLockout): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!adminToken) throw new FoyaError("forbidden", "the admin API (tenants, workers) is disabled: FOYA_ADMIN_TOKEN is not set");
    const token = bearer(c.req.header("authorization"));
    if (!token) throw new FoyaError("unauthorized", "admin token required");
    const credential = presented("admin", token);
    await lockout.check(c, credential);
    const given = Buffer.from(token);
    const expected = Buffer.from(adminToken);
    if (!sameSecret(given, expected)) {
      await lockout.record(c, credential);
      throw new FoyaError("unauthorized", "admin token required");
    }
    await next();
  };
}
