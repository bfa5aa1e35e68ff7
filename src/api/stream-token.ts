import { createHmac } from "node:crypto";
import { sameSecret } from "./same-secret.js";
import { type ApiKeyId, type SessionId, type TenantId, parseId } from "../ids.js";

/**
 * Event-stream tokens (SPEC E3): a browser's `EventSource` cannot send an Authorization header,
 * and an API key must never travel in a URL, so a key holder mints a token that opens the event
 * stream of one session, for a short while, and nothing else. The token is
 * `base64url(JSON claims) "." base64url(HMAC-SHA256(claims))` under a key derived from the
 * deployment's stream-token secret; it is checked when a stream opens (a stream already open
 * outlives it; a reconnect needs a fresh token).
 */

/** How long a token opens streams, seconds. */
export const streamTokenTtlSeconds = 60;

/** Who minted the token, for which session. */
export interface StreamTokenClaims {
  tenantId: TenantId;
  apiKeyId: ApiKeyId;
  sessionId: SessionId;
}

export interface StreamTokens {
  mint(claims: StreamTokenClaims, now?: number): { token: string; expiresAt: Date };
  /** The claims of a well-signed, unexpired token for this session; null for anything else. */
  verify(token: string, sessionId: string, now?: number): StreamTokenClaims | null;
}

interface SignedClaims {
  v: 1;
  t: string;
  k: string;
  s: string;
  /** Expiry, epoch milliseconds. */
  e: number;
}

export function createStreamTokens(secret: string): StreamTokens {
  // A key of its own, so the secret (possibly shared with other uses) never signs anything directly.
  const key = createHmac("sha256", secret).update("foya stream token v1").digest();
  const sign = (payload: string) => createHmac("sha256", key).update(payload).digest();
  return {
    mint(claims, now = Date.now()) {
      const expiresAt = new Date(now + streamTokenTtlSeconds * 1000);
      const signed: SignedClaims = { v: 1, t: claims.tenantId, k: claims.apiKeyId, s: claims.sessionId, e: expiresAt.getTime() };
      const payload = Buffer.from(JSON.stringify(signed)).toString("base64url");
      return { token: `${payload}.${sign(payload).toString("base64url")}`, expiresAt };
    },
    verify(token, sessionId, now = Date.now()) {
      const [payload, signature, extra] = token.split(".");
      if (!payload || !signature || extra !== undefined) return null;
      const expected = sign(payload);
      const given = Buffer.from(signature, "base64url");
      if (!sameSecret(given, expected)) return null;
      let claims: SignedClaims;
      try {
        claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as SignedClaims;
      } catch {
        return null;
      }
      if (claims.v !== 1 || claims.s !== sessionId || typeof claims.e !== "number" || claims.e <= now) return null;
      // Ids the service itself signed: a malformed one in a well-signed token is no token.
      const tenantId = parseId("ten", claims.t);
      const apiKeyId = parseId("key", claims.k);
      const session = parseId("ses", claims.s);
      if (tenantId === null || apiKeyId === null || session === null) return null;
      return { tenantId, apiKeyId, sessionId: session };
    },
  };
}
