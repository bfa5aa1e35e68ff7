import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

/**
 * The address a request came from, for limits keyed by client (SPEC S10). Behind
 * `trustProxyHops` reverse proxies it is the entry that many places from the right of
 * X-Forwarded-For (each proxy appends the address it saw, so entries further left are the
 * client's to forge); otherwise the socket's peer. In-process requests (`app.request`) have
 * no socket and share the address "local".
 */
export function clientAddress(c: Context, trustProxyHops: number): string {
  if (trustProxyHops > 0) {
    const forwarded = (c.req.header("x-forwarded-for") ?? "")
      .split(",")
      .map((entry) => entry.trim())
      .filter(Boolean);
    const entry = forwarded[Math.max(0, forwarded.length - trustProxyHops)];
    if (entry) return entry;
  }
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? "local";
}
