import type { MiddlewareHandler } from "hono";
import type { ApiLimits } from "../../config.js";
import { FoyaError } from "../../errors.js";
import type { AppEnv } from "../app-env.js";
import { slotTag } from "../../net/redis-connection.js";
import { retryAfterSeconds, type FixedWindowCounter } from "./fixed-window-counter.js";

/**
 * Requests per API key per fixed window (SPEC S10), counted in Redis so the limit holds
 * across API instances. Runs after authentication, which sets `apiKeyId`.
 */
export function apiKeyRateLimit(counter: FixedWindowCounter, limits: ApiLimits, keyPrefix: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (limits.rateLimit > 0) {
      const { count, resetInMs } = await counter.hit(`${keyPrefix}:limits:requests:${slotTag(c.get("apiKeyId"))}`, limits.rateWindowMs);
      if (count > limits.rateLimit) {
        const retryAfter = retryAfterSeconds(resetInMs);
        throw new FoyaError(
          "rate_limited",
          `this API key made more than ${limits.rateLimit} requests in ${limits.rateWindowMs} ms; try again in ${retryAfter} s`,
          {
            retryAfterSeconds: retryAfter,
          },
        );
      }
    }
    await next();
  };
}
