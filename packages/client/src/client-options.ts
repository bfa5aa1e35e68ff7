/** How event streams reconnect after a lost connection. */
export interface ReconnectOptions {
  /** Wait before the first reconnect, doubling per failed attempt up to `maxDelayMs`; 250 ms. A server's `retry:` replaces it. */
  initialDelayMs?: number;
  /** Longest wait between attempts (a Retry-After of the server excepted); 5,000 ms. */
  maxDelayMs?: number;
  /** Attempts in a row that receive nothing before the stream throws the last error; unlimited by default. */
  maxAttempts?: number;
}

/** How a client reaches the API. */
export interface FoyaClientOptions {
  /** The API's origin, e.g. `https://foya.example.com` (a trailing slash is ignored). */
  baseUrl: string;
  /** A tenant's API key, sent as `Authorization: Bearer <key>` (never in a URL). */
  apiKey: string;
  /**
   * Sends every request, event streams included; it is always called with one `Request`.
   * Defaults to the global `fetch` (Node 20, browsers).
   */
  fetch?: (request: Request) => Promise<Response>;
  /** How event streams reconnect after a lost connection (defaults in `ReconnectOptions`). */
  reconnect?: ReconnectOptions;
}

/** What the parts of a client share: where to send, how, and with which headers. */
export interface Transport {
  baseUrl: string;
  headers: Record<string, string>;
  fetch: (request: Request) => Promise<Response>;
  reconnect: ReconnectOptions;
}

export function createTransport(options: FoyaClientOptions): Transport {
  return {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    headers: { authorization: `Bearer ${options.apiKey}` },
    // Looked up per call, and called unbound off `globalThis` (browsers refuse a detached `fetch`).
    fetch: options.fetch ?? ((request) => globalThis.fetch(request)),
    reconnect: options.reconnect ?? {},
  };
}
