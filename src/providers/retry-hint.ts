import type { ProviderBackoff } from "../errors.js";

/**
 * What an HTTP error answer of a provider says about its load (SPEC PR3): its kind, and how long
 * it asked callers to stay away, from `retry-after-ms`, `Retry-After` (seconds or an HTTP date),
 * or the rate-limit headers of the limit it ran out of (OpenAI's `x-ratelimit-reset-*`,
 * Anthropic's `anthropic-ratelimit-*-reset`). A wait longer than `maxRetryAfterMs` is cut to it:
 * one answer pauses the profile for every worker, so a daily limit's reset must not stop it for a day.
 */

export const maxRetryAfterMs = 10 * 60_000;

/** OpenAI's and Anthropic's limits: the header naming what is left and the one naming when it refills. */
const limitHeaders = [
  ...["requests", "tokens"].map((limit) => ({ remaining: `x-ratelimit-remaining-${limit}`, reset: `x-ratelimit-reset-${limit}` })),
  ...["requests", "tokens", "input-tokens", "output-tokens"].map((limit) => ({
    remaining: `anthropic-ratelimit-${limit}-remaining`,
    reset: `anthropic-ratelimit-${limit}-reset`,
  })),
];

/** The load an error answer shows, or undefined for an answer that says nothing of load (400, 401, 404 ...). */
export function backoffOfAnswer(status: number, headers: Headers, reason: string, now = Date.now()): ProviderBackoff | undefined {
  const retryAfterMs = retryAfterOf(headers, now);
  const hint = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (status === 429) return { kind: "throttled", ...hint };
  if (status === 529 || (status === 503 && /overload/i.test(reason))) return { kind: "overloaded", ...hint };
  if (status >= 500) return { kind: "server", ...hint };
  return undefined;
}

/** Milliseconds the answer asks to wait, capped, or undefined when it names no wait. */
export function retryAfterOf(headers: Headers, now = Date.now()): number | undefined {
  const asked = explicitRetryAfter(headers, now) ?? exhaustedLimitReset(headers, now);
  return asked === undefined ? undefined : Math.min(maxRetryAfterMs, Math.max(0, Math.ceil(asked)));
}

function explicitRetryAfter(headers: Headers, now: number): number | undefined {
  const milliseconds = Number(headers.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : date - now;
}

/** The latest reset among the limits with nothing left: the wait until every exhausted one refills. */
function exhaustedLimitReset(headers: Headers, now: number): number | undefined {
  let latest: number | undefined;
  for (const { remaining, reset } of limitHeaders) {
    if (headers.get(remaining)?.trim() !== "0") continue;
    const wait = resetIn(headers.get(reset), now);
    if (wait !== undefined) latest = Math.max(latest ?? 0, wait);
  }
  return latest;
}

/** A reset as OpenAI writes it (`1s`, `6m0s`, `20ms`, `1h2m3.5s`) or Anthropic does (an RFC 3339 time). */
function resetIn(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  const duration = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/.exec(text);
  if (duration && text !== "") {
    const [, hours = "0", minutes = "0", seconds = "0", milliseconds = "0"] = duration;
    return Number(hours) * 3_600_000 + Number(minutes) * 60_000 + Number(seconds) * 1000 + Number(milliseconds);
  }
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
