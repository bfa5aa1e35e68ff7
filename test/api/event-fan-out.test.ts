import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOwnRedis, type OwnRedis } from "../chaos/own-redis.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { readSse, type SseEvent } from "../helpers/sse-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * Many streams of one session share the process's feed (src/api/session-feed.ts): one
 * subscription, one parse and one gap fill for all of them. Redis is this file's own
 * redis-server, restarted mid-run: the messages published while it was down are lost, and the
 * feed fills them from Postgres for every stream at once.
 */
let redis: OwnRedis;
let env: TestEnv;
let client: ApiClient;
let baseUrl: string;

const clients = 200;
const steps = 100;

beforeAll(async () => {
  redis = await startOwnRedis();
  env = await createTestEnv({
    REDIS_URL: redis.url,
    FOYA_API_MAX_STREAMS_PER_TENANT: "0",
    FOYA_MAX_STEPS_PER_RUN: String(steps + 10),
    FOYA_SSE_KEEPALIVE_MS: "500",
  });
  await env.startWorker();
  baseUrl = (await env.startServer()).url;
  client = await env.newTenant();
}, 60_000);
afterAll(async () => {
  await env?.close();
  await redis?.stop();
});

/** JSON with every object's keys sorted: the stored and the live copy compare by content, not key order. */
function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

describe("event fan-out", () => {
  it("D5: 200 SSE clients on one session, one run with 500 events and a Redis restart in the middle: every client gets every event once, in order, and the stored copy equals the live one", async () => {
    const { sessionId } = await client.newSession();
    const url = `${baseUrl}/v1/sessions/${sessionId}/events`;
    const readers: Array<Promise<SseEvent[]>> = [];
    for (let i = 0; i < clients; i++)
      readers.push(readSse(url, client.key, { until: (event) => event.event === "run_end", timeoutMs: 180_000 }));
    const open = async () => (await env.services.metrics.sseClients.get()).values[0]?.value ?? 0;
    await waitFor(async () => (await open()) >= clients, 30_000, "every stream to open");

    // Each step: a streamed text, then a tool call; several events each.
    const run = await client.startRun(
      sessionId,
      script(
        Array.from({ length: steps }, (_, i) =>
          i === steps - 1
            ? [{ text: "done" }]
            : [
                { text: "ab", chunks: 2 },
                { tool: "noop", args: {} },
              ],
        ),
        { chunkDelayMs: 5 },
      ),
    );
    const stored = async () =>
      (await env.query<{ n: number }>("select count(*)::int as n from events where session_id = $1", [sessionId]))[0]?.n ?? 0;
    await waitFor(async () => (await stored()) >= 250, 120_000, "half of the run's events");
    await redis.restart();
    const atRestart = await stored();
    const done = await client.waitForRun(run.body.id, 180_000);
    expect(done.status).toBe("completed");

    const log = await client.events(sessionId);
    expect(log.length).toBeGreaterThanOrEqual(500);
    // In the middle: the run went on appending after Redis came back.
    expect(atRestart).toBeLessThan(log.length - 100);
    const expected = log.map((event) => sortedJson(event));
    const received = await Promise.all(readers);
    for (const events of received) {
      expect(events.map((event) => Number(event.id))).toEqual(log.map((event) => event.seq));
      expect(events.map((event) => event.event)).toEqual(log.map((event) => event.type));
      expect(events.map((event) => sortedJson(event.data))).toEqual(expected);
    }
  }, 300_000);
});
