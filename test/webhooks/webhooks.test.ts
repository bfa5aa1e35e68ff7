import { afterEach, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, useTestEnv } from "../helpers/test-env.js";
import { webhookEventTypes } from "../../src/webhooks/webhook-event-types.js";
import { sendWebhook } from "../../src/webhooks/send-webhook.js";
import { startReceiver, type WebhookReceiver } from "./webhook-receiver.js";

const backoffMs = 300;
const timeoutMs = 1000;
const { env } = useTestEnv({
  worker: true,
  overrides: {
    FOYA_WEBHOOK_POLL_MS: "100",
    FOYA_WEBHOOK_BACKOFF_MS: String(backoffMs),
    FOYA_WEBHOOK_ATTEMPTS: "4",
    FOYA_WEBHOOK_TIMEOUT_MS: String(timeoutMs),
    FOYA_WEBHOOK_STALE_MS: "1000",
    FOYA_WEBHOOK_ALLOW_PRIVATE: "true",
  },
});

const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

async function receiver(plan?: Parameters<typeof startReceiver>[0]): Promise<WebhookReceiver> {
  const started = await startReceiver(plan);
  receivers.push(started);
  return started;
}

/** A fresh tenant per test, so one test's runs never reach another test's webhook. */
async function subscribe(
  url: string,
  eventTypes: string[] = ["run_end", "run_status"],
): Promise<{ tenant: ApiClient; id: string; secret: string }> {
  const tenant = await env.newTenant();
  const created = await tenant.post("/v1/webhooks", { url, eventTypes, description: "test receiver" });
  expect(created.status).toBe(201);
  return { tenant, id: created.body.webhook.id, secret: created.body.secret };
}

async function completeRun(tenant: ApiClient): Promise<{ sessionId: string; runId: string }> {
  const { sessionId } = await tenant.newSession();
  const run = await tenant.startRun(sessionId, script([[{ text: "done" }]]));
  expect(run.status).toBe(202);
  const finished = await tenant.waitForRun(run.body.id);
  expect(finished.status).toBe("completed");
  return { sessionId, runId: run.body.id };
}

async function deliveries(tenant: ApiClient, webhookId: string): Promise<any[]> {
  const page = await tenant.get(`/v1/webhooks/${webhookId}/deliveries`);
  expect(page.status).toBe(200);
  return page.body.deliveries;
}

describe("signed outbound webhooks", () => {
  it("S4: a webhook receiver on loopback gets a delivery that standardwebhooks verifies", async () => {
    const hook = await receiver();
    const { tenant, id, secret } = await subscribe(hook.url);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice("whsec_".length), "base64").length).toBeGreaterThanOrEqual(24);

    const { sessionId, runId } = await completeRun(tenant);
    await waitFor(async () => hook.received.length >= 1, 20_000, "the delivery");
    const request = hook.received[0]!;
    expect(request.method).toBe("POST");
    expect(request.headers["content-type"]).toBe("application/json");

    const payload = new Webhook(secret).verify(request.body, request.headers) as any;
    expect(payload.type).toBe("run_end");
    expect(Date.parse(payload.timestamp)).not.toBeNaN();
    expect(payload.data).toMatchObject({ sessionId, runId, event: { type: "run_end", status: "completed" } });
    const events = await tenant.events(sessionId);
    expect(events.find((e) => e.type === "run_end").seq).toBe(payload.data.seq);

    // The signature covers the exact bytes: a changed body or another secret fails.
    expect(() => new Webhook(secret).verify(request.body.replace("completed", "failed"), request.headers)).toThrow();
    const other = await subscribe("https://example.com/other");
    expect(() => new Webhook(other.secret).verify(request.body, request.headers)).toThrow();

    const [delivery] = await waitFor(
      async () => {
        const list = await deliveries(tenant, id);
        return list[0]?.status === "delivered" ? list : null;
      },
      10_000,
      "delivered status",
    );
    expect(delivery.id).toBe(request.headers["webhook-id"]);
    expect(delivery).toMatchObject({ eventType: "run_end", sessionId, eventSeq: payload.data.seq });
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]).toMatchObject({ attempt: 1, statusCode: 200, error: null });
    expect(delivery.deliveredAt).not.toBeNull();
  });

  it("S4: a failing receiver is retried with backoff", async () => {
    const hook = await receiver((index) => (index < 2 ? 500 : 200));
    const { tenant, id, secret } = await subscribe(hook.url, ["run_end"]);
    await completeRun(tenant);

    const [delivery] = await waitFor(
      async () => {
        const list = await deliveries(tenant, id);
        return list[0]?.status === "delivered" ? list : null;
      },
      20_000,
      "delivery after retries",
    );
    expect(delivery.attempts.map((a: any) => [a.attempt, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 200],
    ]);
    expect(delivery.attempts[0].error).toContain("planned 500");
    const times: number[] = delivery.attempts.map((a: any) => Date.parse(a.at));
    const [first, second, third] = times as [number, number, number];
    const gaps = [second - first, third - second] as const;
    // Exponential: about 1x then 2x the base delay (jitter takes off at most 20 %).
    expect(gaps[0]).toBeGreaterThanOrEqual(backoffMs * 0.8 - 20);
    expect(gaps[1]).toBeGreaterThan(gaps[0]);
    expect(gaps[1]).toBeGreaterThanOrEqual(backoffMs * 1.6 - 20);

    // Every attempt carries the same webhook-id, a fresh timestamp and a valid signature.
    expect(hook.received).toHaveLength(3);
    expect(new Set(hook.received.map((r) => r.headers["webhook-id"]))).toEqual(new Set([delivery.id]));
    for (const request of hook.received) expect(() => new Webhook(secret).verify(request.body, request.headers)).not.toThrow();
    expect(new Set(hook.received.map((r) => r.body)).size).toBe(1);
  });

  it("S4: a receiver that never answers hits the timeout, recorded as an attempt error", async () => {
    const hook = await receiver(() => "hang");
    const { tenant, id } = await subscribe(hook.url, ["run_end"]);
    await completeRun(tenant);

    const [delivery] = await waitFor(
      async () => {
        const list = await deliveries(tenant, id);
        return list[0]?.attempts.length >= 1 ? list : null;
      },
      20_000,
      "a timed-out attempt",
    );
    expect(delivery.status).toBe("pending");
    const attempt = delivery.attempts[0];
    expect(attempt.statusCode).toBeNull();
    expect(attempt.error).toBe(`timed out after ${timeoutMs} ms`);
    expect(attempt.durationMs).toBeGreaterThanOrEqual(timeoutMs - 50);
    expect(attempt.durationMs).toBeLessThan(timeoutMs + 2000);
  });

  it("S4: after the last attempt the delivery is marked failed", async () => {
    const hook = await receiver(() => 503);
    const { tenant, id } = await subscribe(hook.url, ["run_end"]);
    await completeRun(tenant);
    const [delivery] = await waitFor(
      async () => {
        const list = await deliveries(tenant, id);
        return list[0]?.status === "failed" ? list : null;
      },
      30_000,
      "failed status",
    );
    expect(delivery.attempts.map((a: any) => a.statusCode)).toEqual([503, 503, 503, 503]);
    expect(hook.received).toHaveLength(4);
    // No job left to retry it: no fifth attempt can come.
    await env.settled();
    expect(hook.received).toHaveLength(4);
  });

  it("S4: finished deliveries past the retention are deleted with their attempts; pending and recent ones stay", async () => {
    const good = await receiver();
    const { tenant, id } = await subscribe(good.url, ["run_end"]);
    await completeRun(tenant);
    await waitFor(async () => (await deliveries(tenant, id))[0]?.status === "delivered", 20_000, "a delivery");
    const hanging = await receiver(() => "hang");
    const stuck = await subscribe(hanging.url, ["run_end"]);
    await completeRun(stuck.tenant);
    await waitFor(
      async () => (await deliveries(stuck.tenant, stuck.id))[0]?.attempts.length >= 1,
      20_000,
      "a pending delivery with an attempt",
    );
    // Both age past 30 days; a third, delivered just now, does not.
    await env.query("update webhook_deliveries set created_at = now() - interval '31 days' where webhook_id = any($1)", [[id, stuck.id]]);
    await completeRun(tenant);
    await waitFor(
      async () => (await deliveries(tenant, id)).filter((d) => d.status === "delivered").length === 2,
      20_000,
      "a recent delivery",
    );
    const old = await env.query<{ id: string }>(
      "select id from webhook_deliveries where webhook_id = $1 and created_at < now() - interval '30 days'",
      [id],
    );

    expect(await env.services.store.webhookDeliveries.pruneWebhookDeliveries(30 * 24 * 3600 * 1000)).toBeGreaterThanOrEqual(1);
    const left = await deliveries(tenant, id);
    expect(left).toHaveLength(1);
    expect(left[0].status).toBe("delivered");
    expect(await env.query("select id from webhook_attempts where delivery_id = any($1)", [old.map((row) => row.id)])).toEqual([]);
    expect((await deliveries(stuck.tenant, stuck.id)).map((d) => d.status)).toEqual(["pending"]);
  });

  it("S4: the secret is shown once; GET and list never show it", async () => {
    const { tenant, id, secret } = await subscribe("https://example.com/hook", ["approval_request", "approval_resolved"]);
    const one = await tenant.get(`/v1/webhooks/${id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id,
      url: "https://example.com/hook",
      eventTypes: ["approval_request", "approval_resolved"],
      enabled: true,
      description: "test receiver",
    });
    expect(one.body).not.toHaveProperty("secret");
    const all = await tenant.get("/v1/webhooks");
    expect(all.body.webhooks.map((w: any) => w.id)).toEqual([id]);
    expect(JSON.stringify([one.body, all.body])).not.toContain(secret.slice("whsec_".length));
  });

  it("D8: another tenant's webhook id answers 404", async () => {
    const { tenant, id } = await subscribe("https://example.com/hook");
    const stranger = await env.newTenant("stranger");
    for (const [method, path] of [
      ["GET", `/v1/webhooks/${id}`],
      ["DELETE", `/v1/webhooks/${id}`],
      ["GET", `/v1/webhooks/${id}/deliveries`],
    ] as const) {
      const response = await stranger.request(method, path);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.error.code).toBe("not_found");
    }
    expect((await stranger.get("/v1/webhooks")).body.webhooks).toEqual([]);
    expect((await tenant.get(`/v1/webhooks/${id}`)).body.enabled).toBe(true);
    const anonymous = await tenant.withKey("foya_nope").get("/v1/webhooks");
    expect(anonymous.status).toBe(401);
  });

  it("S4: an invalid URL or event type answers 400", async () => {
    const tenant = await env.newTenant();
    const bodies: unknown[] = [
      { url: "not a url", eventTypes: ["run_end"] },
      { url: "ftp://example.com/hook", eventTypes: ["run_end"] },
      { url: "javascript:alert(1)", eventTypes: ["run_end"] },
      { url: "https://user:pass@example.com/hook", eventTypes: ["run_end"] },
      { url: "https://example.com/hook", eventTypes: [] },
      { url: "https://example.com/hook", eventTypes: ["text_delta"] },
      { url: "https://example.com/hook", eventTypes: ["run_end"], secret: "whsec_mine" },
    ];
    for (const body of bodies) {
      const response = await tenant.post("/v1/webhooks", body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.code).toBe("bad_request");
    }
    expect((await tenant.get("/v1/webhooks")).body.webhooks).toEqual([]);
    const all = await tenant.post("/v1/webhooks", { url: "http://example.com/hook", eventTypes: ["run_end", "*"] });
    expect(all.status).toBe(201);
    expect(all.body.webhook.eventTypes).toEqual(["*"]);
  });

  it("S4: a disabled webhook gets no deliveries", async () => {
    const hook = await receiver();
    const { tenant, id } = await subscribe(hook.url, ["*"]);
    expect((await tenant.delete(`/v1/webhooks/${id}`)).status).toBe(204);
    expect((await tenant.delete(`/v1/webhooks/${id}`)).status).toBe(204);
    const after = await tenant.get(`/v1/webhooks/${id}`);
    expect(after.body.enabled).toBe(false);
    expect(after.body.disabledAt).not.toBeNull();
    await completeRun(tenant);
    // The trigger writes deliveries with the event; once the outbox and queues are empty, none can come.
    await env.settled();
    expect(hook.received).toHaveLength(0);
    expect(await deliveries(tenant, id)).toEqual([]);
  });

  it("S4: a pending delivery whose job was lost is enqueued again", async () => {
    const hook = await receiver();
    const { tenant, id, secret } = await subscribe(hook.url, ["run_end"]);
    const [row] = await env.query<{ tenant_id: string }>("select tenant_id from webhooks where id = $1", [id]);
    // As if a worker marked the row enqueued, then died before BullMQ got the job.
    await env.query(
      `insert into webhook_deliveries (id, tenant_id, webhook_id, session_id, event_seq, event_type, payload, enqueued_at)
       values ('whd_lost', $1, $2, 'ses_gone', 7, 'run_end', $3, now() - interval '1 hour')`,
      [
        row!.tenant_id,
        id,
        JSON.stringify({
          type: "run_end",
          timestamp: new Date().toISOString(),
          data: { sessionId: "ses_gone", runId: "run_gone", seq: 7, event: { type: "run_end", status: "completed" } },
        }),
      ],
    );
    await waitFor(async () => hook.received.length >= 1, 10_000, "the re-enqueued delivery");
    expect(hook.received[0]!.headers["webhook-id"]).toBe("whd_lost");
    expect(new Webhook(secret).verify(hook.received[0]!.body, hook.received[0]!.headers)).toMatchObject({ data: { seq: 7 } });
    await waitFor(async () => (await deliveries(tenant, id))[0]?.status === "delivered", 10_000, "delivered status");
  });

  it("D7, S4: with two workers polling the outbox, each event is delivered once", async () => {
    await env.startWorker();
    const hook = await receiver();
    const { tenant, id } = await subscribe(hook.url, ["run_end"]);
    const { sessionId } = await tenant.newSession();
    for (let i = 0; i < 5; i++) {
      const run = await tenant.startRun(sessionId, script([[{ text: `run ${i}` }]]), "enqueue");
      expect(run.status).toBe(202);
    }
    const delivered = await waitFor(
      async () => {
        const list = await deliveries(tenant, id);
        return list.length === 5 && list.every((d) => d.status === "delivered") ? list : null;
      },
      20_000,
      "five deliveries",
    );
    expect(delivered.every((d) => d.attempts.length === 1)).toBe(true);
    await env.settled();
    expect(hook.received).toHaveLength(5);
    expect(new Set(hook.received.map((r) => r.headers["webhook-id"])).size).toBe(5);
  });

  it("S4: the webhook routes are in the OpenAPI document", async () => {
    const document = (await (await env.app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(document.paths["/v1/webhooks"] ?? {}).sort()).toEqual(["get", "post"]);
    expect(Object.keys(document.paths["/v1/webhooks/{id}"] ?? {}).sort()).toEqual(["delete", "get"]);
    expect(document.paths["/v1/webhooks/{id}/deliveries"]).toHaveProperty("get");
  });

  it("S4: the deliverable event types are exactly those the outbox trigger fires for", async () => {
    const [trigger] = await env.query<{ def: string }>(
      "select pg_get_triggerdef(oid) as def from pg_trigger where tgname = 'events_webhook_outbox'",
    );
    const listed = [...(trigger?.def ?? "").matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]).sort();
    expect(listed).toEqual([...webhookEventTypes].sort());
  });
});

describe("webhook address guard", () => {
  it("S4: without FOYA_WEBHOOK_ALLOW_PRIVATE, loopback and private targets are refused", async () => {
    const guarded = await createTestEnv();
    try {
      const tenant = await guarded.newTenant();
      for (const url of [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest",
      ]) {
        const response = await tenant.post("/v1/webhooks", { url, eventTypes: ["run_end"] });
        expect(response.status, url).toBe(400);
        expect(response.body.error.message).toContain("does not allow");
      }
      expect((await tenant.post("/v1/webhooks", { url: "https://hooks.example.com/x", eventTypes: ["run_end"] })).status).toBe(201);
    } finally {
      await guarded.close();
    }
    // Checked again before each attempt, after DNS: nothing reaches a loopback receiver.
    const hook = await receiver();
    const outcome = await sendWebhook({
      url: hook.url,
      secret: `whsec_${Buffer.alloc(32, 1).toString("base64")}`,
      deliveryId: "whd_guard",
      body: "{}",
      timeoutMs: 1000,
      allowPrivate: false,
      signal: new AbortController().signal,
    });
    expect(outcome).toMatchObject({ ok: false, statusCode: null });
    expect(outcome.error).toMatch(/^address refused: /);
    expect(hook.received).toHaveLength(0);
  });
});
