import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NewEvent } from "../../src/core/events.js";
import type { RunId, TenantId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun } from "./run-fixtures.js";

/** `store.webhooks`: subscriptions and their delivery log (SPEC S4), every lookup by tenant (D8). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const status = (runId: RunId): NewEvent => ({ runId, step: null, body: { type: "run_status", status: "running" } });
const subscription = (tenantId: TenantId, eventTypes = ["run_status"]) => ({
  tenantId,
  url: "https://hooks.invalid/x",
  eventTypes,
  description: "d",
  secret: "s3cret",
});

describe("store.webhooks", () => {
  it("D8: another tenant's id finds no webhook, lists none and disables nothing", async () => {
    const mine = await db.newSession();
    const other = await db.newSession();
    const webhook = await db.store.webhooks.createWebhook(subscription(mine.tenantId));
    expect(await db.store.webhooks.findWebhook(mine.tenantId, webhook.id)).toMatchObject({ id: webhook.id, disabledAt: null });
    expect(await db.store.webhooks.findWebhook(other.tenantId, webhook.id)).toBeNull();
    expect(await db.store.webhooks.listWebhooks(other.tenantId)).toEqual([]);
    expect(await db.store.webhooks.disableWebhook(other.tenantId, webhook.id)).toBeNull();
    expect((await db.store.webhooks.findWebhook(mine.tenantId, webhook.id))?.disabledAt).toBeNull();
  });

  it("S4: an event of a subscribed type makes one delivery per webhook; other types and other tenants' webhooks none", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    const other = await db.newSession();
    const subscribed = await db.store.webhooks.createWebhook(subscription(tenantId));
    const everything = await db.store.webhooks.createWebhook(subscription(tenantId, ["*"]));
    const elsewhere = await db.store.webhooks.createWebhook(subscription(tenantId, ["run_end"]));
    const foreign = await db.store.webhooks.createWebhook(subscription(other.tenantId, ["*"]));
    await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    expect(await db.store.webhooks.listDeliveries(subscribed.id, 10)).toHaveLength(1);
    expect(await db.store.webhooks.listDeliveries(everything.id, 10)).toHaveLength(1);
    expect(await db.store.webhooks.listDeliveries(elsewhere.id, 10)).toEqual([]);
    expect(await db.store.webhooks.listDeliveries(foreign.id, 10)).toEqual([]);
  });

  it("S4: disabling keeps the first time, gives up pending deliveries, and stops new ones", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    const webhook = await db.store.webhooks.createWebhook(subscription(tenantId));
    await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    const first = await db.store.webhooks.disableWebhook(tenantId, webhook.id);
    const second = await db.store.webhooks.disableWebhook(tenantId, webhook.id);
    expect(first?.disabledAt).not.toBeNull();
    expect(second?.disabledAt).toEqual(first?.disabledAt);
    await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    const deliveries = await db.store.webhooks.listDeliveries(webhook.id, 10);
    expect(deliveries.map((entry) => entry.delivery.status)).toEqual(["failed"]);
  });

  it("S4: deliveries list newest first, at most the limit, each with its attempts in order", async () => {
    const { run, tenantId, sessionId } = await placedRun(db);
    const webhook = await db.store.webhooks.createWebhook(subscription(tenantId));
    await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    await db.store.events.appendEvents(tenantId, sessionId, [status(run.id)]);
    const [newest, oldest] = (await db.store.webhooks.listDeliveries(webhook.id, 10)).map((entry) => entry.delivery);
    expect(newest?.eventSeq).toBeGreaterThan(oldest?.eventSeq ?? Number.POSITIVE_INFINITY);
    const outcome = { ok: false, statusCode: 503, error: "busy", durationMs: 1 };
    for (let i = 0; i < 2; i++)
      await db.store.webhookDeliveries.recordAttempt({
        deliveryId: oldest?.id ?? "whd_missing",
        outcome,
        startedAt: new Date(),
        maxAttempts: 5,
        lastJobAttempt: false,
      });
    const listed = await db.store.webhooks.listDeliveries(webhook.id, 10);
    expect(listed[1]?.attempts.map((attempt) => attempt.attempt)).toEqual([1, 2]);
    expect(listed[0]?.attempts).toEqual([]);
    expect(await db.store.webhooks.listDeliveries(webhook.id, 1)).toHaveLength(1);
  });
});
