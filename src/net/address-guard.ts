import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";

/**
 * Tenants and models choose the URLs the service itself fetches (webhooks,
 * web_fetch), so a shared server must not be turned into a probe of its own
 * network: loopback, private, link-local and similar ranges are refused unless
 * the deployment allows them (FOYA_WEBHOOK_ALLOW_PRIVATE, FOYA_WEB_FETCH_ALLOW_PRIVATE).
 */

function refusedIp(hostname: string, address: string): string | null {
  const range = rangeOf(ipaddr.process(address));
  return range === "unicast" ? null : `${hostname} is ${address} (${range}), which this deployment does not allow`;
}

/**
 * The range of an address, judging an IPv4 address written inside an IPv6 one
 * by the IPv4 address: ipaddr.js calls `::7f00:1` (the deprecated
 * IPv4-compatible form of 127.0.0.1) plain unicast, but a host may route it
 * to its loopback. (IPv4-mapped `::ffff:a.b.c.d` is unwrapped by `process`;
 * NAT64 and 6to4 prefixes have ranges of their own and are refused.)
 */
function rangeOf(address: ipaddr.IPv4 | ipaddr.IPv6): string {
  if (address.kind() === "ipv6") {
    const parts = (address as ipaddr.IPv6).parts;
    if (parts.slice(0, 6).every((part) => part === 0) && (parts[6] !== 0 || (parts[7] ?? 0) > 1)) {
      const high = parts[6] ?? 0;
      const low = parts[7] ?? 0;
      return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]).range();
    }
  }
  return address.range();
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
