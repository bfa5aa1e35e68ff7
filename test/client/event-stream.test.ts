import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFoyaClient, type FoyaClient, type FoyaEvent } from "../../packages/client/src/index.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";
import { cuttingFetch } from "./cutting-fetch.js";

let env: TestEnv;
let tenant: ApiClient;
let baseUrl: string;

beforeAll(async () => {
  env = await createTestEnv();
  await env.startWorker();
  baseUrl = (await env.startServer()).url;
  tenant = await env.newTenant();
});
afterAll(async () => env?.close());

/** Three steps of streamed text and tool calls, spread over a second or so: many events, most of them live. */
const busyRun = script(
  [
    [
      { text: "a".repeat(24), chunks: 24 },
      { tool: "probe", args: { marker: "e1-a", sleepMs: 40 } },
      { tool: "noop", args: {} },
    ],
    [
      { text: "b".repeat(24), chunks: 24 },
      { tool: "probe", args: { marker: "e1-b", sleepMs: 40, parallel: false } },
      { tool: "noop", args: {} },
    ],
    [{ text: "c".repeat(24), chunks: 24 }],
  ],
  { chunkDelayMs: 25 },
);

function sdkWith(fetch: (request: Request) => Promise<Response>): FoyaClient {
  return createFoyaClient({ baseUrl, apiKey: tenant.key, fetch, reconnect: { initialDelayMs: 20, maxDelayMs: 200 } });
}

async function collect(events: AsyncIterable<FoyaEvent>): Promise<FoyaEvent[]> {
  const all: FoyaEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe("@foya/client event streams", () => {
  it("E1: the stream resumes after a forced disconnect with no gap or duplicate", async () => {
    const { sessionId } = await tenant.newSession();
    // A first turn, so the run streamed below starts in the middle of the session's log.
    const first = await tenant.startRun(sessionId, script([[{ text: "earlier turn" }]]));
    await tenant.waitForRun(first.body.id);
    const before = (await tenant.events(sessionId)).at(-1).seq as number;

    // The first connection is cut after 4 events, the second after 6; the third is left alone.
    const transport = cuttingFetch({ cuts: [4, 6] });
    const sdk = sdkWith(transport.fetch);
    const { run, events } = await sdk.runs.stream(sessionId, busyRun);
    const received = await collect(events);

    expect(transport.cuts).toBe(2);
    const seqs = received.map((event) => event.seq);
    expect(seqs).toEqual(seqs.map((_, index) => before + 1 + index));
    expect(received.every((event) => event.runId === run.id)).toBe(true);
    const last = received.at(-1);
    expect(last?.type).toBe("run_end");
    if (last?.type === "run_end") expect(last.data.status).toBe("completed");

    // Each reconnect asked for exactly what followed the last event yielded.
    expect(transport.streamRequests.map((request) => request.headers.get("last-event-id"))).toEqual([
      String(before),
      String(seqs[3]),
      String(seqs[9]),
    ]);
    // Both cuts came while the run was still going: the resumed connections carried live events.
    const ended = await sdk.runs.wait(run.id, { timeoutMs: 10_000 });
    expect(ended.status).toBe("completed");
    for (const cutAt of transport.cutTimes) expect(cutAt).toBeLessThan(Date.parse(ended.endedAt ?? ""));

    // What was yielded is the stored log of the run, event for event.
    const stored = (await sdk.events.list(sessionId, { after: before, limit: 1000 })).events;
    expect(received).toEqual(stored);
  });

  it("E1: events a server sends again after a reconnect are dropped by sequence number", async () => {
    const { sessionId } = await tenant.newSession();
    const run = await tenant.startRun(sessionId, busyRun);
    await tenant.waitForRun(run.body.id);
    const stored = await tenant.events(sessionId);

    // The second connection forgets Last-Event-ID and asks from the start: the server replays the whole log.
    const transport = cuttingFetch({
      cuts: [8],
      rewrite: (request, index) => {
        if (index === 0) return request;
        const headers = new Headers(request.headers);
        headers.delete("last-event-id");
        const url = new URL(request.url);
        url.searchParams.set("after", "0");
        return new Request(url, { headers, signal: request.signal });
      },
    });
    const sdk = sdkWith(transport.fetch);
    const received = await collect(sdk.events.stream(sessionId, { until: (event) => event.type === "run_end" }));

    expect(transport.cuts).toBe(1);
    expect(transport.streamRequests[1]?.headers.get("last-event-id")).toBeNull();
    expect(received.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
    expect(received.map((event) => event.type)).toEqual(stored.map((event) => event.type));
  });

  it("E1: breaking out of a stream closes its connection; an abort ends it with the signal's reason", async () => {
    const { sessionId } = await tenant.newSession();
    const run = await tenant.startRun(sessionId, script([[{ text: "hello" }]]));
    await tenant.waitForRun(run.body.id);
    const sdk = createFoyaClient({ baseUrl, apiKey: tenant.key });

    const openStreams = async () => (await env.services.metrics.sseClients.get()).values[0]?.value ?? 0;
    const seen: FoyaEvent[] = [];
    for await (const event of sdk.events.stream(sessionId)) {
      seen.push(event);
      if (seen.length === 1) expect(await openStreams()).toBe(1);
      if (seen.length === 2) break;
    }
    expect(seen.map((event) => event.seq)).toEqual([1, 2]);
    await waitFor(async () => (await openStreams()) === 0, 5_000, "the server to see the stream closed");

    const controller = new AbortController();
    const reading = collect(sdk.events.stream(sessionId, { after: 1, signal: controller.signal }));
    setTimeout(() => controller.abort(new Error("enough")), 300);
    await expect(reading).rejects.toThrow("enough");
  });
});
