import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { readSse } from "../helpers/sse-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
let baseUrl: string;

beforeAll(async () => {
  env = await createTestEnv();
  await env.startWorker();
  baseUrl = (await env.startServer()).url;
  client = await env.newTenant();
});
afterAll(async () => env?.close());

const chatty = (parts: number) =>
  script(
    [
      [
        { text: "a".repeat(parts), chunks: parts },
        { tool: "noop", args: {} },
        { tool: "noop", args: {} },
      ],
      [{ text: "b".repeat(parts), chunks: parts }],
    ],
    { chunkDelayMs: 15 },
  );

describe("session events over SSE", () => {
  it("D5: an SSE client that disconnects mid-run and resumes with Last-Event-ID gets no gap, no duplicate, in order", async () => {
    const { sessionId } = await client.newSession();
    const url = `${baseUrl}/v1/sessions/${sessionId}/events`;
    const first = readSse(url, client.key, { until: (_, all) => all.length >= 5 });
    await client.startRun(sessionId, chatty(40));
    const before = await first;
    const lastSeen = Number(before.at(-1)!.id);
    // Stay away until the run has appended events this client has not seen, then resume.
    await waitFor(async () => (await client.events(sessionId)).length >= lastSeen + 10, 20_000, "events appended while away");
    const after = await readSse(url, client.key, { lastEventId: lastSeen, until: (event) => event.event === "run_end" });

    const seqs = [...before, ...after].map((event) => Number(event.id));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const stored = await client.events(sessionId);
    expect(stored.map((event) => event.seq)).toEqual(seqs);
    expect([...before, ...after].map((event) => event.event)).toEqual(stored.map((event) => event.type));
    for (const event of after) expect(event.data.seq).toBe(Number(event.id));
  });

  it("X2: closing the SSE connection leaves the run going", async () => {
    const { sessionId } = await client.newSession();
    const url = `${baseUrl}/v1/sessions/${sessionId}/events`;
    const reading = readSse(url, client.key, { until: (event) => event.event === "text_delta" });
    const run = await client.startRun(sessionId, chatty(20));
    await reading; // the connection is dropped here, mid-run
    const done = await client.waitForRun(run.body.id);
    expect(done.status).toBe("completed");
  });

  it("X2: cancel persists the partial text and every running call's state in one transaction and ends the stream with a terminal event", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const url = `${baseUrl}/v1/sessions/${sessionId}/events`;
    const stream = readSse(url, client.key, { until: (event) => event.event === "run_end" });
    const run = await client.startRun(
      sessionId,
      script([[{ text: "thinking" }, { tool: "marker_sleep", args: { marker: "x2", sleepMs: 60_000 } }, { tool: "noop", args: {} }]]),
    );
    await waitFor(async () => (await readMarkers(workspace, "x2")).length === 1, 20_000, "the tool to start");
    const cancelled = await client.post(`/v1/runs/${run.body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("cancelled");
    const events = await stream;
    expect(events.at(-1)!.data.data).toMatchObject({ type: "run_end", status: "cancelled" });

    const calls = await env.query<{ status: string; error_code: string }>(
      "select status, error_code from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(calls).toEqual([
      { status: "cancelled", error_code: "cancelled" },
      { status: "cancelled", error_code: "not_run_cancelled" },
    ]);
    expectValidHistory(await client.messages(sessionId));
    // Cancelling again changes nothing and says so, with the run's state (D11).
    const again = await client.post(`/v1/runs/${run.body.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.current).toMatchObject({ id: run.body.id, status: "cancelled" });
  });

  it("X2: cancelling mid-stream keeps the text the model had streamed", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "x".repeat(200), chunks: 200 }]], { chunkDelayMs: 20 }));
    await waitFor(async () => (await client.events(sessionId)).some((event) => event.type === "text_delta"), 20_000, "streaming");
    await client.post(`/v1/runs/${run.body.id}/cancel`);
    const messages = await client.messages(sessionId);
    const assistant = messages.find((m) => m.role === "assistant");
    expect(assistant).toBeDefined();
    expect(assistant.content.text.length).toBeGreaterThan(0);
    expect(assistant.content.text.length).toBeLessThan(200);
    // The worker notices the cancel and does not commit the rest of the answer: once its job has ended, nothing more can come.
    await env.settled();
    expect((await client.messages(sessionId)).filter((m) => m.role === "assistant")).toHaveLength(1);
  });

  it("events: JSON pages with ?after= list the log in order", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "hi" }]]));
    await client.waitForRun(run.body.id);
    const all = await client.events(sessionId);
    const page = await client.get(`/v1/sessions/${sessionId}/events?after=2&limit=2`);
    expect(page.body.events.map((e: { seq: number }) => e.seq)).toEqual([3, 4]);
    expect(page.body.next).toBe(4);
    expect(all.length).toBeGreaterThan(4);
  });
});
