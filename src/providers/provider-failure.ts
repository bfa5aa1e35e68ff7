import { asRecord, asString } from "./wire-fields.js";

/**
 * What a tenant may read of a provider failure (SPEC S10): the run's error and its
 * `run_end` event carry these messages, so they never hold the provider's URL (its host,
 * a secret path or query) nor a header value (API keys). The full detail goes into the
 * error's `cause`, which the operator's log shows.
 */

/** Enough of an error body to diagnose, short enough for a log line. */
export const errorExcerptLength = 300;

const urlPattern = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;
const bearerPattern = /\bBearer\s+[^\s"',}]+/gi;
/** Path words the adapters add themselves, or that every deployment has; anything else in the path may be a secret. */
const commonPathSegments = new Set(["completions", "messages", "anthropic", "openai", "v1beta", "models", "deployments"]);

/**
 * The strings of a request a message must not repeat: every header value the adapter set
 * (keys, bearer tokens), and the URL's host, path and query values. Longest first, so a
 * secret that contains another is replaced whole.
 */
export function requestSecrets(url: string, headers: Record<string, string>): string[] {
  const secrets = new Set<string>();
  const add = (value: string | undefined, minLength: number) => {
    if (value && value.length >= minLength) secrets.add(value);
  };
  for (const value of Object.values(headers)) {
    add(value, 4);
    add(/^Bearer\s+(.+)$/i.exec(value)?.[1], 4);
  }
  if (URL.canParse(url)) {
    const parsed = new URL(url);
    add(parsed.host, 4);
    add(parsed.hostname, 4);
    add(parsed.username, 1);
    add(parsed.password, 1);
    add(parsed.pathname, 2);
    add(parsed.search.slice(1), 1);
    for (const segment of parsed.pathname.split("/")) {
      if (!commonPathSegments.has(segment)) {
        add(segment, 8);
        add(safeDecode(segment), 8);
      }
    }
    for (const [, value] of parsed.searchParams) add(value, 4);
  }
  return [...secrets].sort((a, b) => b.length - a.length);
}

/** `text` without URLs, bearer tokens or any of `secrets`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let redacted = text.replace(urlPattern, "[url]").replace(bearerPattern, "Bearer [redacted]");
  for (const secret of secrets) redacted = redacted.replaceAll(secret, "[redacted]");
  return redacted;
}

/** The reason in an error body: the provider's `error.type` and `error.message` when it sent JSON, else the text. */
export function errorBodyReason(excerpt: string, body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return excerpt;
  }
  const error = asRecord(asRecord(parsed)?.error);
  const message = asString(error?.message);
  if (!message) return excerpt;
  const type = asString(error?.type) ?? asString(error?.code);
  return (type ? `${type}: ${message}` : message).replace(/\s+/g, " ").trim().slice(0, errorExcerptLength);
}

/** The URL for the operator's log: host and path, the query's values left out (keys are often passed there). */
export function loggableUrl(url: string): string {
  if (!URL.canParse(url)) return "(unparseable URL)";
  const parsed = new URL(url);
  const query = [...parsed.searchParams.keys()].map((key) => `${key}=…`).join("&");
  return `${parsed.origin}${parsed.pathname}${query ? `?${query}` : ""}`;
}

/** A transport failure in a few words, from the error codes of Node and undici; never an address. */
export function transportReason(error: unknown): string {
  switch (errorCode(error) ?? errorCode((error as { cause?: unknown } | null)?.cause)) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host name not found";
    case "ECONNRESET":
    case "EPIPE":
    case "UND_ERR_SOCKET":
      return "connection closed before the answer was complete";
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return "connection timed out";
    case "UND_ERR_HEADERS_TIMEOUT":
    case "UND_ERR_BODY_TIMEOUT":
      return "no answer in time";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable";
    default: {
      const code = errorCode(error) ?? errorCode((error as { cause?: unknown } | null)?.cause) ?? "";
      return /CERT|TLS|SSL/.test(code) ? "TLS handshake failed" : "the request failed before an answer";
    }
  }
}

function errorCode(error: unknown): string | undefined {
  return asString(asRecord(error)?.code);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
