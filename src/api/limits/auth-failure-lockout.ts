import type { Context } from "hono";
import { slotTag, type RedisConnection } from "../../net/redis-connection.js";
import type { ApiLimits } from "../../config.js";
import { FoyaError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { clientAddress } from "./client-address.js";
import { retryAfterSeconds, withDeadline, type FixedWindowCounter, type WindowCount } from "./fixed-window-counter.js";

/**
 * Failed authentications (SPEC S10), counted in Redis so every API instance shares them, at two
 * levels:
 *
 * - **per credential and address**: one key, token or guess presented from one client address.
 *   Past `authFailureLimit` that pair is refused (429) before it is looked at again: a client
 *   retrying a revoked key stops costing lookups, and nobody else is touched.
 * - **per address**, every credential of a scope together: a guesser rotating garbage keys makes
 *   a new pair with each one, so past `authFailureAddressLimit` the address is refused every
 *   credential it cannot show to be genuine without a lookup. Tenants' API keys that have
 *   authenticated before (anywhere, remembered in Redis for 30 days, and from creation on) and
 *   stream tokens whose signature holds still pass, so one guesser behind a NAT no longer locks
 *   out every client behind it. The operator's admin and metrics tokens get no such exemption:
 *   they are chosen by a person and may be guessable, and a locked address that let the right
 *   one through would answer each guess "wrong" or "right"; a 192-bit API key gives a guesser
 *   nothing to learn from that answer.
 *
 * Scopes are counted apart, so guessing the metrics token does not lock out a NAT's tenants.
 */
export type CredentialScope = "tenant" | "admin" | "metrics";

export interface PresentedCredential {
  scope: CredentialScope;
  /** sha256 of what was presented, hex: it names the pair, never the secret. */
  digest: string;
}

export interface AuthFailureLockout {
  /**
   * Throws `auth_locked_out` when this credential may not be tried from the request's address.
   * `genuine`: the credential proved itself without a lookup (a stream token's signature).
   */
  check(c: Context, credential: PresentedCredential, options?: { genuine?: boolean }): Promise<void>;
  /** Counts a failed authentication of this credential from the request's address. */
  record(c: Context, credential: PresentedCredential): Promise<void>;
  /** A tenant credential that just authenticated, or was just issued: it passes an address others' failures locked. */
  vouch(credential: PresentedCredential): void;
}

/** How long a tenant's key is remembered as genuine after its last use or its creation. */
const knownForMs = 30 * 24 * 3600 * 1000;
/** A process renews a key's mark at most this often (every authenticated request would otherwise write to Redis). */
const vouchEveryMs = 10 * 60 * 1000;
const maxVouched = 10_000;

export function createAuthFailureLockout(deps: {
  counter: FixedWindowCounter;
  redis: RedisConnection;
  logger: Logger;
  limits: ApiLimits;
  keyPrefix: string;
}): AuthFailureLockout {
  const { counter, limits, keyPrefix } = deps;
  const base = `${keyPrefix}:limits:auth-failures`;
  // The scope and address are the hash tag: a pair's key and its address's share a slot, so `check` peeks at both in one pipeline.
  const addressKey = (c: Context, scope: CredentialScope) => `${base}:${slotTag(`${scope}:${clientAddress(c, limits.trustProxyHops)}`)}`;
  // 128 bits of the digest are plenty to tell credentials apart, and keep keys short.
  const pairKey = (c: Context, credential: PresentedCredential) => `${addressKey(c, credential.scope)}:${credential.digest.slice(0, 32)}`;
  const knownKey = (credential: PresentedCredential) => `${keyPrefix}:limits:auth-known:${slotTag(credential.digest.slice(0, 32))}`;
  const vouchedAt = new Map<string, number>();

  const lockedOut = (count: WindowCount, limit: number, what: string): FoyaError | undefined => {
    if (limit === 0 || count.count < limit) return undefined;
    const retryAfter = retryAfterSeconds(count.resetInMs);
    return new FoyaError("auth_locked_out", `too many failed authentications ${what}; try again in ${retryAfter} s`, {
      retryAfterSeconds: retryAfter,
    });
  };

  const isKnown = async (credential: PresentedCredential): Promise<boolean> => {
    try {
      return (await withDeadline(deps.redis.exists(knownKey(credential)))) === 1;
    } catch (error) {
      deps.logger.warn({ err: error }, "auth lockout: reading known keys failed; the key is treated as unknown");
      return false;
    }
  };

  return {
    async check(c, credential, options = {}) {
      if (limits.authFailureLimit === 0 && limits.authFailureAddressLimit === 0) return;
      const [pair, address] = await counter.peekMany([pairKey(c, credential), addressKey(c, credential.scope)]);
      const pairRefusal = lockedOut(pair as WindowCount, limits.authFailureLimit, "with this credential from this address");
      if (pairRefusal) throw pairRefusal;
      const addressRefusal = lockedOut(address as WindowCount, limits.authFailureAddressLimit, "from this address");
      if (!addressRefusal) return;
      const passes = credential.scope === "tenant" && (options.genuine === true || (await isKnown(credential)));
      if (!passes) throw addressRefusal;
    },
    async record(c, credential) {
      const window = limits.authFailureWindowMs;
      await Promise.all([
        limits.authFailureLimit > 0 ? counter.hit(pairKey(c, credential), window) : undefined,
        limits.authFailureAddressLimit > 0 ? counter.hit(addressKey(c, credential.scope), window) : undefined,
        // A key that was genuine and failed now (revoked) is not vouched for any longer.
        credential.scope === "tenant" ? withDeadline(deps.redis.del(knownKey(credential))).catch(() => undefined) : undefined,
      ]);
    },
    vouch(credential) {
      if (credential.scope !== "tenant" || limits.authFailureAddressLimit === 0) return;
      const key = knownKey(credential);
      const now = performance.now();
      if (now - (vouchedAt.get(key) ?? Number.NEGATIVE_INFINITY) < vouchEveryMs) return;
      if (vouchedAt.size >= maxVouched) vouchedAt.clear();
      vouchedAt.set(key, now);
      // Off the request's path: a mark written late only delays the exemption.
      withDeadline(deps.redis.set(key, "1", "PX", knownForMs)).catch((error: unknown) => {
        vouchedAt.delete(key);
        deps.logger.warn({ err: error }, "auth lockout: remembering a genuine key failed");
      });
    },
  };
}
