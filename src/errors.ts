/**
 * Infrastructure and request failures. Tool business failures are never thrown:
 * they are `is_error` results (see src/tools/tool.ts). Check `code`, not `instanceof`.
 */
export type FoyaErrorCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  /** A Full Access session or run without the operator's grant (SPEC S8); the message says what is missing. */
  | "full_access_not_granted"
  | "not_found"
  | "conflict"
  /** A request body over the route's limit (SPEC S10); the message names the limit. */
  | "payload_too_large"
  /** Too many requests with one API key in the current window (SPEC S10); answered with Retry-After. */
  | "rate_limited"
  /** Too many failed authentications from one client address (SPEC S10); answered with Retry-After. */
  | "auth_locked_out"
  /** The tenant already has as many open event streams as the deployment allows (SPEC S10). */
  | "too_many_streams"
  /** A tenant quota (SPEC X5) refuses the request: the message names it and its use; answered 429 with Retry-After. */
  | "quota_exceeded"
  | "approval_conflict"
  | "approval_expired"
  | "provider_error"
  | "provider_config"
  /** The process is still starting (waiting for Postgres or Redis, SPEC D9); answered 503 with Retry-After. */
  | "starting"
  /** Postgres or Redis went away during the request (SPEC D9); answered 503 with Retry-After. */
  | "unavailable"
  /** No worker of the host a project is placed on took the API's request on its workspace in time (SPEC W3); 503 with Retry-After. */
  | "no_worker"
  /** The project's host took the API's request on its workspace but did not answer in time (SPEC W3); 504. */
  | "worker_timeout"
  | "internal";

const httpStatusByCode: Record<FoyaErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  full_access_not_granted: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  auth_locked_out: 429,
  too_many_streams: 429,
  quota_exceeded: 429,
  approval_conflict: 409,
  approval_expired: 409,
  provider_error: 502,
  provider_config: 500,
  starting: 503,
  unavailable: 503,
  no_worker: 503,
  worker_timeout: 504,
  internal: 500,
};

/**
 * What a provider failure says about load (SPEC PR3), for the step job to act on: `throttled`
 * (429) and `overloaded` (529, or 503 naming overload) with the wait the provider asked for
 * (Retry-After or its rate-limit headers) pause the profile for every worker; `server` (other
 * 5xx) and `transport` (no answer) back off with jitter, one step at a time.
 */
export interface ProviderBackoff {
  kind: "throttled" | "overloaded" | "server" | "transport";
  /** Milliseconds from when the answer came, when the provider said. */
  retryAfterMs?: number;
}

export class FoyaError extends Error {
  readonly code: FoyaErrorCode;
  /** For 429s and 503s: when the client may try again, in whole seconds (the HTTP `Retry-After` header). */
  readonly retryAfterSeconds: number | undefined;
  /**
   * For 409s: the record as it is now, so a client that lost a race (SPEC D11)
   * sees what won without another request. Answered as `error.current`.
   */
  readonly current: Record<string, unknown> | undefined;
  /** For `provider_error`: what the answer said about the provider's load, when it said something. */
  readonly backoff: ProviderBackoff | undefined;
  constructor(
    code: FoyaErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number; current?: Record<string, unknown>; backoff?: ProviderBackoff },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "FoyaError";
    this.code = code;
    this.retryAfterSeconds = options?.retryAfterSeconds;
    this.current = options?.current;
    this.backoff = options?.backoff;
  }
  get httpStatus(): number {
    return httpStatusByCode[this.code];
  }
}

export function isFoyaError(error: unknown): error is FoyaError {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "FoyaError";
}

export const notFound = (what: string): FoyaError => new FoyaError("not_found", `${what} not found`);
