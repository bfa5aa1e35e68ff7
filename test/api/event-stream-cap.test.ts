import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

const maxStreams = 2;

let env: TestEnv;
let baseUrl: string;

beforeAll(async () => {
  env = await createTestEnv({ FOYA_API_MAX_STREAMS_PER_TENANT: String(maxStreams) });
  baseUrl = (await env.startServer()).url;
});
afterAll(async () => env?.close());

interface OpenStream {
  status: number;
  /** The error body when the stream was refused. */
  error?: { code: string; message: string };
  /** Drops the connection, like a client that goes away. */
  close(): void;
}

/** Opens an SSE stream over real HTTP and keeps it open until `close`. */
async function openStream(client: ApiClient, sessionId: string): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/sessions/${sessionId}/events`, {
    headers: { authorization: `Bearer ${client.key}`, accept: "text/event-stream" },
    signal: controller.signal,
  });
  if (response.status !== 200) {
    const body = (await response.json()) as { error: { code: string; message: string } };
    return { status: response.status, error: body.error, close: () => undefined };
  }
  // Keep reading so the connection stays healthy; the abort ends it.
  void (async () => {
    try {
      for await (const chunk of response.body!) void chunk;
    } catch {
      // aborted
    }
  })();
  return { status: 200, close: () => controller.abort() };
}

describe("open SSE streams per tenant", () => {
  it("S10: the stream beyond the tenant's cap answers 429 too_many_streams; other tenants are unaffected; a closed stream frees its slot", async () => {
    const tenant = await env.newTenant("streamer");
    const neighbour = await env.newTenant("neighbour");
    const { sessionId } = await tenant.newSession();
    const { sessionId: otherSession } = await tenant.newSession();
    const { sessionId: neighbourSession } = await neighbour.newSession();

    const open = [await openStream(tenant, sessionId), await openStream(tenant, otherSession)];
    expect(open.map((stream) => stream.status)).toEqual([200, 200]);
    const refused = await openStream(tenant, sessionId);
    expect(refused.status).toBe(429);
    expect(refused.error?.code).toBe("too_many_streams");
    expect(refused.error?.message).toContain(`${maxStreams} open event streams`);
    // JSON pages are not streams, and are still served.
    expect((await tenant.get(`/v1/sessions/${sessionId}/events`)).status).toBe(200);

    const neighbours = await openStream(neighbour, neighbourSession);
    expect(neighbours.status).toBe(200);

    // The client goes away: its slot comes back, without waiting for the slot to lapse.
    open[0]!.close();
    const reopened = await waitFor(
      async () => {
        const attempt = await openStream(tenant, sessionId);
        return attempt.status === 200 ? attempt : undefined;
      },
      3_000,
      "the closed stream's slot to be freed",
    );
    expect((await openStream(tenant, otherSession)).status).toBe(429);

    for (const stream of [open[1]!, reopened, neighbours]) stream.close();
    const slots = `${env.config.redis.queuePrefix}:limits:streams:{${tenant.tenantId}}`;
    await waitFor(async () => (await env.services.redis.zcard(slots)) === 0, 3_000, "every slot to be freed");
  });

  it("S10: a slot whose process died lapses, so the tenant is not locked out for good", async () => {
    const tenant = await env.newTenant("crashed");
    const { sessionId } = await tenant.newSession();
    const slots = `${env.config.redis.queuePrefix}:limits:streams:{${tenant.tenantId}}`;
    // Two slots left behind by a process that died: they lapse a moment from now.
    const lapse = Date.now() + 1_000;
    await env.services.redis.zadd(slots, lapse, "dead-1", lapse, "dead-2");
    expect((await openStream(tenant, sessionId)).status).toBe(429);
    const stream = await waitFor(
      async () => {
        const attempt = await openStream(tenant, sessionId);
        return attempt.status === 200 ? attempt : undefined;
      },
      5_000,
      "the dead slots to lapse",
    );
    stream.close();
  });
});
