import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { ApiLimits } from "../../config.js";
import { FoyaError } from "../../errors.js";

/** Routes whose bodies carry user or model content, and get the larger limit. */
const inputRoutes: ReadonlyArray<{ method: string; path: RegExp }> = [
  { method: "POST", path: /^\/v1\/sessions\/[^/]+\/runs\/?$/ },
  { method: "POST", path: /^\/v1\/approvals\/[^/]+\/?$/ },
];

/**
 * Request body limit per route (SPEC S10), enforced while the body is read: a declared
 * Content-Length over the limit is refused before any byte is read, and a body without one
 * (chunked) is read only up to the limit, then refused; Node drains or drops the rest of it.
 * Runs after authentication, so only a known key can make the API read a body.
 */
export function requestBodyLimit(limits: Pick<ApiLimits, "maxBodyBytes" | "maxInputBodyBytes">): MiddlewareHandler {
  const limiterFor = (maxSize: number): MiddlewareHandler =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw new FoyaError("payload_too_large", `the request body is larger than this route's limit of ${maxSize} bytes`);
      },
    });
  const small = limiterFor(limits.maxBodyBytes);
  const large = limiterFor(limits.maxInputBodyBytes);
  return async (c, next) => {
    const isInput = inputRoutes.some((route) => route.method === c.req.method && route.path.test(c.req.path));
    return (isInput ? large : small)(c, next);
  };
}
