import type { Context } from "hono";
import type { ApiLimits } from "../../config.js";
import { FoyaError } from "../../errors.js";
import { clientAddress } from "./client-address.js";
import { retryAfterSeconds, type FixedWindowCounter } from "./fixed-window-counter.js";

/**
 * Failed authentications per client address (SPEC S10). Past the limit the address is
 * refused (429) before any key it sends is looked at, for the rest of the window: a
 * guesser learns nothing more, and costs no more database reads.
 */
export interface AuthFailureLockout {
  /** Throws `auth_locked_out` when the request's address is locked out. */
  check(c: Context): Promise<void>;
  /** Counts a failed authentication of the request's address. */
  record(c: Context): Promise<void>;
}

export function createAuthFailureLockout(counter: FixedWindowCounter, limits: ApiLimits, keyPrefix: string): AuthFailureLockout {
  const keyOf = (c: Context) => `${keyPrefix}:limits:auth-failures:${clientAddress(c, limits.trustProxyHops)}`;
  const enabled = limits.authFailureLimit > 0;
  return {
    async check(c) {
      if (!enabled) return;
      const { count, resetInMs } = await counter.peek(keyOf(c));
      if (count >= limits.authFailureLimit) {
        const retryAfter = retryAfterSeconds(resetInMs);
        throw new FoyaError("auth_locked_out", `too many failed authentications from this address; try again in ${retryAfter} s`, {
          retryAfterSeconds: retryAfter,
        });
      }
    },
    async record(c) {
      if (enabled) await counter.hit(keyOf(c), limits.authFailureWindowMs);
    },
  };
}
