import { createParser } from "eventsource-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunId, SessionId, TenantId } from "../../src/ids.js";
import { waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * A client that stops reading holds a bounded backlog and nobody else: the other streams of its
 * session keep getting events, and once it reads again it gets what it missed, from Postgres for
 * what has left the session feed's window (1,024 frames), in order and once. The streams are read
 * through the in-process app, so "not reading" is exact: nothing pulls the response body.
 */
let env: TestEnv;
let client: ApiClient;

beforeAll(async () => {
  // No worker: the only events are the ones the test commits.
  env = await createTestEnv();
  client = await env.newTenant();
});
afterAll(async () => env?.close());

interface Reader {
  seqs: number[];
  /** Reads until `count` events arrived, then stops reading (the body stays open). */
  readUntil(count: number): Promise<void>;
  cancel(): Promise<void>;
}

async function openStream(sessionId: SessionId): Promise<Reader> {
  const response = await env.app.request(`/v1/sessions/${sessionId}/events`, {
    headers: { authorization: `Bearer ${client.key}`, accept: "text/event-stream" },
  });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const seqs: number[] = [];
  const parser = createParser({ onEvent: (message) => seqs.push(Number(message.id)) });
  return {
    seqs,
    async readUntil(count) {
      while (seqs.length < count) {
        const { done, value } = await reader.read();
        if (done) throw new Error("the stream ended");
        parser.feed(decoder.decode(value, { stream: true }));
      }
    },
    cancel: () => reader.cancel(),
  };
}

describe("SSE backlog", () => {
  it("D5, S10: a stream whose client stops reading does not hold up the others, and later gets every event once, in order, from Postgres and the feed", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, "hello");
    const runId = run.body.id as RunId;
    const tenantId = client.tenantId as TenantId;
    const first = (await client.events(sessionId)).length;
    const fast = await openStream(sessionId);
    const slow = await openStream(sessionId);
    await Promise.all([fast.readUntil(first), slow.readUntil(first)]);

    // One commit per event, each published after its commit, as a streaming step's are: more than the window holds.
    const total = first + 1600;
    const commits = (async () => {
      for (let i = 0; i < 1600; i++) {
        await env.services.unitOfWork.transact((fx) =>
          fx.emit(tenantId, sessionId, [{ runId, step: null, body: { type: "text_delta", text: `part ${i}` } }]),
        );
      }
    })();
    // The fast client gets everything while the slow one reads nothing.
    await fast.readUntil(total);
    await commits;

    // The slow client reads again: what left the window comes from Postgres, the rest from the feed.
    await slow.readUntil(total);
    const all = Array.from({ length: total }, (_, i) => i + 1);
    expect(fast.seqs).toEqual(all);
    expect(slow.seqs).toEqual(all);
    await waitFor(async () => (await client.events(sessionId)).length === total, 5_000, "the log");
    await Promise.all([fast.cancel(), slow.cancel()]);
  }, 120_000);
});
