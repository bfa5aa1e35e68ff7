/**
 * Reading provider wire data field by field: servers that claim compatibility
 * differ in which fields they send and whether absent ones are null, so nothing
 * is trusted as a declared shape.
 */

export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

export function asString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function asNumber(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

/** A transport error's message; undici reports "fetch failed" and keeps the useful part (ECONNREFUSED...) in the cause. */
export function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}
