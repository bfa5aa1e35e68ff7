import { createFoyaClient, isFoyaApiError, type FoyaClient } from "@foya/client";

/**
 * The key lives in sessionStorage: it goes with the tab, is sent only as an Authorization
 * header (the SDK's way), and never appears in a URL; event streams use stream tokens instead.
 */
const storageKey = "foya.apiKey";

export function storedApiKey(): string | null {
  return sessionStorage.getItem(storageKey);
}

export function storeApiKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(storageKey);
  else sessionStorage.setItem(storageKey, key);
}

/** A client of the API that served the console. */
export function consoleClient(apiKey: string): FoyaClient {
  return createFoyaClient({ baseUrl: location.origin, apiKey });
}

/** What to show a person for a failed call. */
export function describeError(error: unknown): string {
  if (isFoyaApiError(error)) return `${error.status} ${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
