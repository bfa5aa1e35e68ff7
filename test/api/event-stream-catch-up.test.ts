import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, type ApiClient } from "../helpers/api-client.js";
import { readSse } from "../helpers/sse-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
let baseUrl: string;

beforeAll(async () => {
  // No worker: the only events are the ones the test appends.
  env = await createTestEnv({ FOYA_SSE_KEEPALIVE_MS: "300" });
  baseUrl = (await env.startServer()).url;
  client = await env.newTenant();
});
afterAll(async () => env?.close());

describe("SSE catch-up without a query per stream", () => {
  it("S10, D5: events whose pub/sub messages were lost still reach every open stream, through the process's periodic sequence check", async () => {
    const sessions = [await client.newSession(), await client.newSession()];
    const runs = await Promise.all(sessions.map(({ sessionId }) => client.startRun(sessionId, "hello")));
    const before = await Promise.all(sessions.map(({ sessionId }) => client.events(sessionId)));
    const replayed = sessions.map(() => false);
    const streams = sessions.map(({ sessionId }, index) =>
      readSse(`${baseUrl}/v1/sessions/${sessionId}/events`, client.key, {
        until: (event, all) => {
          if (all.length === before[index]!.length) replayed[index] = true;
          return event.event === "tasks_updated";
        },
        timeoutMs: 10_000,
      }),
    );
    await waitFor(async () => replayed.every(Boolean), 5_000, "the streams to replay the log");
    // Appended without publishing, as if Redis had dropped the message.
    for (const [index, { sessionId }] of sessions.entries()) {
      await env.services.store.events.appendEvents(client.tenantId!, sessionId, [
        { runId: runs[index]!.body.id, step: null, body: { type: "tasks_updated", tasks: [] } },
      ]);
    }
    const received = await Promise.all(streams);
    for (const [index, events] of received.entries()) {
      expect(events.map((event) => Number(event.id))).toEqual([...before[index]!.map((event) => event.seq), before[index]!.length + 1]);
    }
  });
});
