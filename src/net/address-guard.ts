import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";

/**
 * Tenants and models choose the URLs the service itself fetches (webhooks,
 * web_fetch), so a shared server must not be turned into a probe of its own
 * network: loopback, private, link-local and similar ranges are refused unless
 * the deployment allows them (FOYA_WEBHOOK_ALLOW_PRIVATE, FOYA_WEB_FETCH_ALLOW_PRIVATE).
 */

function refusedIp(hostname: string, address: string): string | null {
  const range = ipaddr.process(address).range();
  return range === "unicast" ? null : `${hostname} is ${address} (${range}), which this deployment does not allow`;
}

const bare = (hostname: string) => hostname.replace(/^\[|\]$/g, "");

/** Checked when a webhook is created: literal addresses and localhost, without DNS. */
export function refusedLiteralHost(hostname: string): string | null {
  const host = bare(hostname);
  if (host === "localhost" || host.endsWith(".localhost")) return `${hostname} is a loopback name, which this deployment does not allow`;
  return ipaddr.isValid(host) ? refusedIp(hostname, host) : null;
}

/** Checked before each attempt: every address the name resolves to must be public. */
export async function refusedHost(hostname: string): Promise<string | null> {
  const host = bare(hostname);
  const literal = refusedLiteralHost(hostname);
  if (literal || ipaddr.isValid(host)) return literal;
  const addresses = await lookup(host, { all: true });
  for (const { address } of addresses) {
    const refused = refusedIp(hostname, address);
    if (refused) return refused;
  }
  return null;
}
