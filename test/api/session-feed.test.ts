import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionFeeds } from "../../src/api/session-feed.js";
import { createSessionSequenceWatch } from "../../src/api/session-sequence-watch.js";
import type { RunId, SessionId, TenantId } from "../../src/ids.js";
import type { Store } from "../../src/store/store.js";
import { waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * The feed of a session is shared by every stream of it in a process: one subscription and one
 * Postgres read per gap, whatever the number of streams. The store is the real one; its event reads
 * are counted on the way through.
 */
let env: TestEnv;
let client: ApiClient;

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant();
});
afterAll(async () => env?.close());

describe("session feed", () => {
  it("D5: 50 streams of one session cost one Postgres read per gap, and the window keeps at most its bytes", async () => {
    const { sessionId: id } = await client.newSession();
    const sessionId = id as SessionId;
    const tenantId = client.tenantId as TenantId;
    const runId = (await client.startRun(sessionId, "hello")).body.id as RunId;
    let reads = 0;
    const store = env.services.store;
    const counted: Pick<Store, "events" | "sessions"> = {
      sessions: store.sessions,
      events: {
        ...store.events,
        readEvents: (...args: Parameters<Store["events"]["readEvents"]>) => {
          reads += 1;
          return store.events.readEvents(...args);
        },
      },
    };
    const feeds = createSessionFeeds({
      store: counted,
      bus: env.services.bus,
      // No periodic check in this test: only a later event shows the gap.
      sequences: createSessionSequenceWatch(store, 3_600_000, env.services.logger),
      logger: env.services.logger,
      windowBytes: 4096,
    });
    const streams = Array.from({ length: 50 }, () => feeds.acquire(tenantId, sessionId));
    const feed = streams[0]!.feed;
    expect(streams.every((stream) => stream.feed === feed)).toBe(true);
    await feed.ready;
    const start = feed.head;

    // 30 events appended and not published (as if Redis had lost their messages), then one published.
    const text = "x".repeat(200);
    const body = { type: "text_delta" as const, text };
    await store.events.appendEvents(
      tenantId,
      sessionId,
      Array.from({ length: 30 }, () => ({ runId, step: null, body })),
    );
    await env.services.unitOfWork.transact((fx) => fx.emit(tenantId, sessionId, [{ runId, step: null, body }]));
    await waitFor(async () => feed.head === start + 31, 10_000, "the feed to fill the gap");
    expect(reads).toBe(1);

    // About 300 bytes a frame: 4 KiB keeps the newest dozen or so, contiguous up to the head; older ones are Postgres's.
    const kept = feed.framesAfter(feed.windowStart - 1, 1000) ?? [];
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.reduce((sum, frame) => sum + frame.bytes.length, 0)).toBeLessThanOrEqual(4096 * 1.5);
    expect(kept.map((frame) => frame.seq)).toEqual(kept.map((_, i) => feed.windowStart + i));
    expect(kept.at(-1)?.seq).toBe(start + 31);
    expect(feed.framesAfter(start, 1)).toBeNull();
    for (const stream of streams) stream.release();
  });
});
