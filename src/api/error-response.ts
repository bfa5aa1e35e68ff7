import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { FoyaError } from "../errors.js";

/** How every API answers a `FoyaError`: `{ error: { code, message, current? } }`, its status, and `Retry-After` when it has one. */
export function foyaErrorResponse(c: Context, error: FoyaError): Response {
  if (error.retryAfterSeconds !== undefined) c.header("Retry-After", String(error.retryAfterSeconds));
  return c.json(
    { error: { code: error.code, message: error.message, ...(error.current ? { current: error.current } : {}) } },
    error.httpStatus as ContentfulStatusCode,
  );
}
