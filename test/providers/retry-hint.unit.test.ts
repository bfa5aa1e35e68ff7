import { describe, expect, it } from "vitest";
import { backoffOfAnswer, maxRetryAfterMs, retryAfterOf } from "../../src/providers/retry-hint.js";

/** What a provider's error answer says about its load (SPEC PR3): the kind, and the wait it asked for. */
const now = Date.parse("2025-01-01T00:00:00Z");
const headers = (entries: Record<string, string>) => new Headers(entries);

describe("retry hints of provider answers", () => {
  it("PR3: retry-after-ms, Retry-After in seconds and as an HTTP date", () => {
    expect(retryAfterOf(headers({ "retry-after-ms": "1500", "retry-after": "9" }), now)).toBe(1500);
    expect(retryAfterOf(headers({ "retry-after": "3" }), now)).toBe(3000);
    expect(retryAfterOf(headers({ "retry-after": "0.5" }), now)).toBe(500);
    expect(retryAfterOf(headers({ "retry-after": "Wed, 01 Jan 2025 00:00:07 GMT" }), now)).toBe(7000);
    expect(retryAfterOf(headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(retryAfterOf(headers({}), now)).toBeUndefined();
  });

  it("PR3: OpenAI's and Anthropic's rate-limit headers: the latest reset of the limits with nothing left", () => {
    const openai = headers({
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "1m30.5s",
      "x-ratelimit-remaining-tokens": "4000",
      "x-ratelimit-reset-tokens": "6m0s",
    });
    expect(retryAfterOf(openai, now)).toBe(90_500);
    expect(retryAfterOf(headers({ "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20ms" }), now)).toBe(20);
    const anthropic = headers({
      "anthropic-ratelimit-input-tokens-remaining": "0",
      "anthropic-ratelimit-input-tokens-reset": "2025-01-01T00:00:12Z",
      "anthropic-ratelimit-requests-remaining": "0",
      "anthropic-ratelimit-requests-reset": "2025-01-01T00:00:04Z",
    });
    expect(retryAfterOf(anthropic, now)).toBe(12_000);
    // Nothing exhausted, nothing to wait for.
    expect(
      retryAfterOf(
        headers({ "anthropic-ratelimit-requests-remaining": "5", "anthropic-ratelimit-requests-reset": "2025-01-01T00:00:04Z" }),
        now,
      ),
    ).toBeUndefined();
  });

  it("PR3: a wait longer than the cap is cut to it: one answer must not stop a profile for a day", () => {
    expect(retryAfterOf(headers({ "retry-after": "86400" }), now)).toBe(maxRetryAfterMs);
  });

  it("PR3: 429 is throttled, 529 and a 503 naming overload are overloaded, other 5xx server, 4xx nothing", () => {
    expect(backoffOfAnswer(429, headers({ "retry-after": "3" }), "rate_limit_error", now)).toEqual({
      kind: "throttled",
      retryAfterMs: 3000,
    });
    expect(backoffOfAnswer(429, headers({}), "", now)).toEqual({ kind: "throttled" });
    expect(backoffOfAnswer(529, headers({}), "overloaded_error: Overloaded", now)).toEqual({ kind: "overloaded" });
    expect(backoffOfAnswer(503, headers({ "retry-after": "2" }), "The server is overloaded", now)).toEqual({
      kind: "overloaded",
      retryAfterMs: 2000,
    });
    expect(backoffOfAnswer(503, headers({}), "maintenance", now)).toEqual({ kind: "server" });
    expect(backoffOfAnswer(400, headers({ "retry-after": "3" }), "bad request", now)).toBeUndefined();
  });
});
