import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NewEvent } from "../../src/core/events.js";
import type { DeliveryId, RunId, TenantId, WebhookId } from "../../src/ids.js";
import type { AttemptOutcome } from "../../src/store/webhook-deliveries.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun } from "./run-fixtures.js";

/**
 * `store.webhookDeliveries`: the outbox rows the events trigger writes (SPEC S4), their claims by
 * pollers (D7), and the guarded statement that records an attempt.
 */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const status = (runId: RunId): NewEvent => ({ runId, step: null, body: { type: "run_status", status: "running" } });
const failure: AttemptOutcome = { ok: false, statusCode: 500, error: "server error", durationMs: 12 };
const success: AttemptOutcome = { ok: true, statusCode: 200, error: null, durationMs: 7 };

/** A webhook on run_status events and the pending delivery one event made. */
async function pendingDelivery(): Promise<{ tenantId: TenantId; webhookId: WebhookId; deliveryId: DeliveryId }> {
  const { run, tenantId, sessionId } = await placedRun(db);
  const webhook = await db.store.webhooks.createWebhook({
    tenantId,
    url: "https://hooks.invalid/x",
    eventTypes: ["run_status"],
    description: null,
    secret: "s3cret",
  });
  await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
  const [row] = await db.query<{ id: DeliveryId }>("select id from webhook_deliveries where webhook_id = $1", [webhook.id]);
  if (!row) throw new Error("the trigger made no delivery");
  return { tenantId, webhookId: webhook.id, deliveryId: row.id };
}

async function deliveryRow(id: DeliveryId) {
  const [row] = await db.query<{ status: string; attempts: number; enqueued_at: Date | null; delivered_at: Date | null }>(
    "select status, attempts, enqueued_at, delivered_at from webhook_deliveries where id = $1",
    [id],
  );
  return row;
}

const attemptCount = async (deliveryId: DeliveryId) =>
  (await db.query("select 1 from webhook_attempts where delivery_id = $1", [deliveryId])).length;

describe("store.webhookDeliveries claims", () => {
  it("D7, S4: a pending delivery is claimed for enqueueing once; a second poller finds it taken", async () => {
    const { deliveryId } = await pendingDelivery();
    const first = await db.store.webhookDeliveries.claimNewDeliveries(100);
    expect(first.map((row) => row.id)).toContain(deliveryId);
    expect((await deliveryRow(deliveryId))?.enqueued_at).not.toBeNull();
    const second = await db.store.webhookDeliveries.claimNewDeliveries(100);
    expect(second.map((row) => row.id)).not.toContain(deliveryId);
  });

  it("D7: an enqueued delivery is reclaimed only once it is stale, and only while pending", async () => {
    const { deliveryId } = await pendingDelivery();
    await db.store.webhookDeliveries.claimNewDeliveries(100);
    const fresh = await db.store.webhookDeliveries.claimStaleDeliveries(60_000, 100);
    expect(fresh.map((row) => row.id)).not.toContain(deliveryId);
    const enqueuedAt = (await deliveryRow(deliveryId))?.enqueued_at;
    const stale = await db.store.webhookDeliveries.claimStaleDeliveries(0, 100);
    expect(stale.map((row) => row.id)).toContain(deliveryId);
    expect((await deliveryRow(deliveryId))?.enqueued_at?.getTime()).toBeGreaterThan(enqueuedAt?.getTime() ?? Number.POSITIVE_INFINITY);
    await db.store.webhookDeliveries.abandonDelivery(deliveryId);
    const ended = await db.store.webhookDeliveries.claimStaleDeliveries(0, 100);
    expect(ended.map((row) => row.id)).not.toContain(deliveryId);
  });
});

describe("store.webhookDeliveries attempts", () => {
  it("S4: failed attempts keep the delivery pending until the last one allowed, which fails it", async () => {
    const { deliveryId } = await pendingDelivery();
    const attempt = (lastJobAttempt = false) =>
      db.store.webhookDeliveries.recordAttempt({ deliveryId, outcome: failure, startedAt: new Date(), maxAttempts: 3, lastJobAttempt });
    expect(await attempt()).toEqual({ attempt: 1, status: "pending" });
    expect(await attempt()).toEqual({ attempt: 2, status: "pending" });
    expect(await attempt()).toEqual({ attempt: 3, status: "failed" });
    expect(await attemptCount(deliveryId)).toBe(3);
  });

  it("S4: the job's last attempt fails the delivery even below the attempts allowed", async () => {
    const { deliveryId } = await pendingDelivery();
    const recorded = await db.store.webhookDeliveries.recordAttempt({
      deliveryId,
      outcome: failure,
      startedAt: new Date(),
      maxAttempts: 10,
      lastJobAttempt: true,
    });
    expect(recorded).toEqual({ attempt: 1, status: "failed" });
  });

  it("D4, S4: a delivered delivery records no further attempt: a duplicate job's answer is null and writes nothing", async () => {
    const { deliveryId } = await pendingDelivery();
    const input = { deliveryId, startedAt: new Date(), maxAttempts: 5, lastJobAttempt: false };
    expect(await db.store.webhookDeliveries.recordAttempt({ ...input, outcome: success })).toEqual({ attempt: 1, status: "delivered" });
    expect((await deliveryRow(deliveryId))?.delivered_at).not.toBeNull();
    expect(await db.store.webhookDeliveries.recordAttempt({ ...input, outcome: failure })).toBeNull();
    expect(await db.store.webhookDeliveries.recordAttempt({ ...input, outcome: success })).toBeNull();
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "delivered", attempts: 1 });
    expect(await attemptCount(deliveryId)).toBe(1);
  });

  it("S4: abandoning fails a pending delivery and leaves a delivered one delivered", async () => {
    const pending = await pendingDelivery();
    await db.store.webhookDeliveries.abandonDelivery(pending.deliveryId);
    expect((await deliveryRow(pending.deliveryId))?.status).toBe("failed");
    const delivered = await pendingDelivery();
    await db.store.webhookDeliveries.recordAttempt({
      deliveryId: delivered.deliveryId,
      outcome: success,
      startedAt: new Date(),
      maxAttempts: 5,
      lastJobAttempt: false,
    });
    await db.store.webhookDeliveries.abandonDelivery(delivered.deliveryId);
    expect((await deliveryRow(delivered.deliveryId))?.status).toBe("delivered");
  });
});

describe("store.webhookDeliveries reads and pruning", () => {
  it("S4: a delivery loads with its webhook's URL, secret, payload and whether the webhook was disabled", async () => {
    const { tenantId, webhookId, deliveryId } = await pendingDelivery();
    const loaded = await db.store.webhookDeliveries.loadDelivery(deliveryId);
    expect(loaded).toMatchObject({ id: deliveryId, status: "pending", attempts: 0, url: "https://hooks.invalid/x", secret: "s3cret" });
    expect(loaded?.webhookDisabled).toBe(false);
    expect(loaded?.payload).toMatchObject({ type: "run_status" });
    await db.store.webhooks.disableWebhook(tenantId, webhookId);
    expect(await db.store.webhookDeliveries.loadDelivery(deliveryId)).toMatchObject({ status: "failed", webhookDisabled: true });
    expect(await db.store.webhookDeliveries.loadDelivery("whd_missing")).toBeNull();
  });

  it("S4: pruning removes finished deliveries past retention with their attempts, never a pending one", async () => {
    const finished = await pendingDelivery();
    await db.store.webhookDeliveries.recordAttempt({
      deliveryId: finished.deliveryId,
      outcome: failure,
      startedAt: new Date(),
      maxAttempts: 1,
      lastJobAttempt: false,
    });
    const pending = await pendingDelivery();
    expect(await db.store.webhookDeliveries.pruneWebhookDeliveries(60 * 60_000)).toBe(0);
    expect(await deliveryRow(finished.deliveryId)).toBeDefined();
    expect(await db.store.webhookDeliveries.pruneWebhookDeliveries(0)).toBeGreaterThanOrEqual(1);
    expect(await deliveryRow(finished.deliveryId)).toBeUndefined();
    expect(await attemptCount(finished.deliveryId)).toBe(0);
    expect((await deliveryRow(pending.deliveryId))?.status).toBe("pending");
  });
});
