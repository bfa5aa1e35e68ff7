/**
 * A provider's own rate limit in front of a fake wire server (SPEC PR3 tests), as providers
 * enforce theirs: fixed windows of `windowMs` (counted from the limiter's start), at most
 * `requests` requests and `tokens` tokens in each, a request's tokens counted when it arrives.
 * Past either, the answer is 429 with `Retry-After` (whole seconds to the window's end) and
 * OpenAI's rate-limit headers. Every arrival is recorded.
 */
export interface ProviderRateLimit {
  windowMs: number;
  requests: number;
  tokens: number;
}

export interface Arrival {
  at: number;
  /** The provider's window it arrived in: 0, 1, ... from the limiter's start. */
  window: number;
  tokens: number;
  refused: boolean;
}

export type RateDecision = { kind: "answer" } | { kind: "refuse"; status: 429; body: string; headers: Record<string, string> };

export interface RateLimiter {
  readonly arrivals: Arrival[];
  /** Counts a request of `tokens` arriving now: answer it, or refuse it. */
  admit(tokens: number, at?: number): RateDecision;
  /** Requests refused, and those that arrived in a window after its first refusal, more than `graceMs` after it. */
  afterFirstRefusal(graceMs: number): Arrival[];
}

export function providerRateLimit(limit: ProviderRateLimit, start = Date.now()): RateLimiter {
  const arrivals: Arrival[] = [];
  const used = new Map<number, { requests: number; tokens: number }>();
  return {
    arrivals,
    admit(tokens, at = Date.now()) {
      const window = Math.floor((at - start) / limit.windowMs);
      const counted = used.get(window) ?? { requests: 0, tokens: 0 };
      used.set(window, counted);
      const refused = counted.requests + 1 > limit.requests || counted.tokens + tokens > limit.tokens;
      arrivals.push({ at, window, tokens, refused });
      if (!refused) {
        counted.requests += 1;
        counted.tokens += tokens;
        return { kind: "answer" };
      }
      const resetMs = start + (window + 1) * limit.windowMs - at;
      return {
        kind: "refuse",
        status: 429,
        body: JSON.stringify({ error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" } }),
        headers: {
          "retry-after": String(Math.max(1, Math.ceil(resetMs / 1000))),
          "x-ratelimit-limit-requests": String(limit.requests),
          "x-ratelimit-remaining-requests": String(Math.max(0, limit.requests - counted.requests)),
          "x-ratelimit-reset-requests": `${resetMs}ms`,
        },
      };
    },
    afterFirstRefusal(graceMs) {
      const firstRefusal = new Map<number, number>();
      for (const arrival of arrivals)
        if (arrival.refused && !firstRefusal.has(arrival.window)) firstRefusal.set(arrival.window, arrival.at);
      return arrivals.filter((arrival) => {
        const first = firstRefusal.get(arrival.window);
        return first !== undefined && arrival.at > first + graceMs;
      });
    },
  };
}
