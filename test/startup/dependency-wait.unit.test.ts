import { describe, expect, it } from "vitest";
import { backoffDelays, isConnectionError, retryWhileUnavailable, shortReason, urlSecrets } from "../../src/startup/dependency-wait.js";
import { pino } from "pino";
import { createStartupStatus } from "../../src/startup/startup-status.js";

const errorWith = (message: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(message), fields);

describe("start-up retries", () => {
  it("D9: delays start at 250 ms and double up to 5 s, each within ±20%, never above 5 s", () => {
    for (let trial = 0; trial < 50; trial++) {
      const next = backoffDelays();
      const delays = Array.from({ length: 8 }, next);
      [250, 500, 1000, 2000, 4000].forEach((base, index) => {
        expect(delays[index]).toBeGreaterThanOrEqual(base * 0.8);
        expect(delays[index]).toBeLessThanOrEqual(base * 1.2);
      });
      for (const delay of delays.slice(5)) expect(delay).toBeGreaterThanOrEqual(4000);
      for (const delay of delays) expect(delay).toBeLessThanOrEqual(5000);
    }
  });

  it("D9: a logged reason is short and never holds a connection string's password", () => {
    const secrets = urlSecrets("postgres://foya:p%40ss@db:5432/foya");
    expect(shortReason(errorWith("connect ECONNREFUSED 10.0.0.1:5432", { code: "ECONNREFUSED" }), secrets)).toBe("ECONNREFUSED");
    expect(shortReason(errorWith("the database system is starting up", { code: "57P03" }), secrets)).toBe(
      "the database system is starting up",
    );
    expect(shortReason(errorWith("cannot reach postgres://foya:p@ss@db:5432/foya."), secrets)).toBe(
      "cannot reach postgres://***@db:5432/foya",
    );
    expect(shortReason(errorWith("password p@ss refused"), secrets)).toBe("password *** refused");
    expect(shortReason(errorWith("x".repeat(500))).length).toBe(200);
  });

  it("D9: connection failures are waited out; a statement Postgres refuses is not", () => {
    expect(isConnectionError(errorWith("connect ECONNREFUSED 127.0.0.1:5432", { code: "ECONNREFUSED" }))).toBe(true);
    expect(isConnectionError(errorWith("Connection terminated unexpectedly"))).toBe(true);
    expect(isConnectionError(errorWith("the database system is shutting down", { code: "57P01" }))).toBe(true);
    expect(
      isConnectionError(errorWith("Failed query: create table", { cause: errorWith("read ECONNRESET", { code: "ECONNRESET" }) })),
    ).toBe(true);
    expect(
      isConnectionError(Object.assign(new AggregateError([errorWith("connect ECONNREFUSED ::1:5432", { code: "ECONNREFUSED" })], ""))),
    ).toBe(true);
    expect(isConnectionError(errorWith('syntax error at or near "tabel"', { code: "42601" }))).toBe(false);
    expect(
      isConnectionError(errorWith("Failed query: create table", { cause: errorWith('relation "runs" already exists', { code: "42P07" }) })),
    ).toBe(false);
  });

  it("D9: waiting is logged once per attempt and shown by the start-up status until the dependency answers", async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const capture = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const status = createStartupStatus();
    const seen: string[] = [];
    let attempts = 0;
    const result = await retryWhileUnavailable(
      "redis",
      async () => {
        seen.push(status.describe());
        if (++attempts < 3) throw errorWith("connect ECONNREFUSED 127.0.0.1:6379", { code: "ECONNREFUSED" });
        return "answered";
      },
      { logger: capture, status, initialDelayMs: 5, maxDelayMs: 10 },
    );
    expect(result).toBe("answered");
    expect(seen).toEqual(["starting", "waiting for redis", "waiting for redis"]);
    expect(status.describe()).toBe("starting");
    expect(lines.filter((line) => line.level === 40).map((line) => line.msg.replace(/\d+ ms$/, "N ms"))).toEqual([
      "waiting for redis: ECONNREFUSED; retry in N ms",
      "waiting for redis: ECONNREFUSED; retry in N ms",
    ]);
    // A refusal that is not about the connection is thrown at once, unlogged.
    await expect(
      retryWhileUnavailable("postgres", () => Promise.reject(errorWith("bad migration", { code: "42601" })), {
        logger: capture,
        retryIf: isConnectionError,
      }),
    ).rejects.toThrow("bad migration");
    expect(lines.filter((line) => line.msg.includes("postgres"))).toEqual([]);
  });
});
