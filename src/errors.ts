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
  | "approval_conflict"
  | "approval_expired"
  | "provider_error"
  | "provider_config"
  | "internal";

const httpStatusByCode: Record<FoyaErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  full_access_not_granted: 403,
  not_found: 404,
  conflict: 409,
  approval_conflict: 409,
  approval_expired: 409,
  provider_error: 502,
  provider_config: 500,
  internal: 500,
};

export class FoyaError extends Error {
  readonly code: FoyaErrorCode;
  constructor(code: FoyaErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FoyaError";
    this.code = code;
  }
  get httpStatus(): number {
    return httpStatusByCode[this.code];
  }
}

export function isFoyaError(error: unknown): error is FoyaError {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "FoyaError";
}

export const notFound = (what: string): FoyaError => new FoyaError("not_found", `${what} not found`);
