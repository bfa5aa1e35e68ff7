import { Agent, fetch as undiciFetch } from "undici";

/**
 * A provider profile's HTTP client: one keep-alive connection pool per profile, made once when the
 * registry is built and reused by every request of the profile, so a step's request goes out on a
 * connection already open (no TCP or TLS handshake before the first token). Profiles do
 * not share connections: one provider's slow or broken connections never hold another's requests.
 *
 * Idle connections stay open `keepAliveMs` when the server does not say how long it keeps them
 * (Node's global fetch closes them after 4 s, shorter than a user's pause between turns); a
 * server's own `Keep-Alive: timeout` is honoured, up to `keepAliveMaxMs`. Idle sockets do not keep
 * the process alive.
 */
export interface ProviderHttp {
  /** `fetch` on this profile's pool. */
  readonly fetch: typeof fetch;
  /** Closes the pool's connections (the process is stopping). */
  close(): Promise<void>;
}

export interface ProviderHttpOptions {
  /** How long an idle connection is kept when the server names no keep-alive timeout; default 60 s. */
  keepAliveMs?: number;
  /** The most a server's keep-alive hint may keep a connection idle; default 10 min. */
  keepAliveMaxMs?: number;
}

export function createProviderHttp(options: ProviderHttpOptions = {}): ProviderHttp {
  const agent = new Agent({
    keepAliveTimeout: options.keepAliveMs ?? 60_000,
    keepAliveMaxTimeout: options.keepAliveMaxMs ?? 600_000,
  });
  // undici's fetch and Node's global one are the same WHATWG fetch (Node bundles undici); this one
  // takes this pool as its dispatcher. The cast bridges the two packages' type declarations.
  const pooled = ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch;
  return {
    fetch: pooled,
    close: () => agent.close(),
  };
}
