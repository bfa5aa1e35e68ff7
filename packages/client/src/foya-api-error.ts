/**
 * An answer of the API other than 2xx. `code` is the API's stable error code (`not_found`,
 * `conflict`, `rate_limited`, ...); check it rather than the message. A 409 carries `current`,
 * the record as it stands after the operation that won. Answers without the API's error body
 * (a proxy's 502) get the code `http_<status>`.
 */
export class FoyaApiError extends Error {
  override readonly name = "FoyaApiError";
  readonly status: number;
  readonly code: string;
  readonly current: Record<string, unknown> | undefined;
  /** Seconds from the Retry-After header (429, 503), when the API sent one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: { status: number; code: string; message: string; current?: Record<string, unknown>; retryAfterSeconds?: number }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.current = init.current;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }

  /** From an answer and its body, parsed as JSON when it was JSON, else its text. */
  static fromBody(response: Response, body: unknown): FoyaApiError {
    const retryAfter = Number.parseInt(response.headers.get("retry-after") ?? "", 10);
    const error = isErrorBody(body) ? body.error : undefined;
    return new FoyaApiError({
      status: response.status,
      code: error?.code ?? `http_${response.status}`,
      message: error?.message ?? (typeof body === "string" && body.length > 0 ? body.slice(0, 500) : `the API answered ${response.status}`),
      ...(error?.current ? { current: error.current } : {}),
      ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
    });
  }

  /** Reads the answer's body, then as `fromBody`. */
  static async fromResponse(response: Response): Promise<FoyaApiError> {
    const text = await response.text().catch(() => "");
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: the text is the message.
    }
    return FoyaApiError.fromBody(response, body);
  }
}

/** True for a FoyaApiError, also one from another copy of this package (no `instanceof`). */
export function isFoyaApiError(error: unknown): error is FoyaApiError {
  return error instanceof Error && error.name === "FoyaApiError" && typeof (error as FoyaApiError).code === "string";
}

function isErrorBody(body: unknown): body is { error: { code: string; message: string; current?: Record<string, unknown> } } {
  if (typeof body !== "object" || body === null) return false;
  const error = (body as { error?: unknown }).error;
  return (
    typeof error === "object" &&
    error !== null &&
    typeof (error as { code?: unknown }).code === "string" &&
    typeof (error as { message?: unknown }).message === "string"
  );
}
