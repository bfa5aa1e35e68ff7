import { and, asc, desc, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { webhookAttempts, webhookDeliveries, webhooks } from "../db/schema.js";
import { type TenantId, type WebhookId, newId } from "../ids.js";
import { repository } from "./repository.js";

/** Webhook subscriptions and their delivery log (SPEC S4), as the API reads and writes them; every lookup is by tenant (D8). */

export type WebhookRow = typeof webhooks.$inferSelect;
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;

async function createWebhook(
  db: Database,
  input: { tenantId: TenantId; url: string; eventTypes: string[]; description: string | null; secret: string },
): Promise<WebhookRow> {
  const [row] = await db
    .insert(webhooks)
    .values({
      id: newId("whk"),
      tenantId: input.tenantId,
      url: input.url,
      eventTypes: input.eventTypes,
      secret: input.secret,
      description: input.description,
    })
    .returning();
  if (!row) throw new Error("webhook insert returned nothing");
  return row;
}

async function findWebhook(db: Database, tenantId: TenantId, id: WebhookId): Promise<WebhookRow | null> {
  const [row] = await db
    .select()
    .from(webhooks)
    .where(and(eq(webhooks.id, id), eq(webhooks.tenantId, tenantId)));
  return row ?? null;
}

async function listWebhooks(db: Database, tenantId: TenantId): Promise<WebhookRow[]> {
  return db.select().from(webhooks).where(eq(webhooks.tenantId, tenantId)).orderBy(asc(webhooks.createdAt), asc(webhooks.id));
}

/**
 * Disables a subscription: the trigger stops creating deliveries for it, and
 * deliveries not yet sent are given up in the same transaction. Disabling
 * twice keeps the first time. Answers null for another tenant's id.
 */
async function disableWebhook(db: Database, tenantId: TenantId, id: WebhookId): Promise<WebhookRow | null> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(webhooks)
      .set({ disabledAt: sql`coalesce(${webhooks.disabledAt}, now())` })
      .where(and(eq(webhooks.id, id), eq(webhooks.tenantId, tenantId)))
      .returning();
    if (!row) return null;
    await tx
      .update(webhookDeliveries)
      .set({ status: "failed" })
      .where(and(eq(webhookDeliveries.webhookId, id), eq(webhookDeliveries.status, "pending")));
    return row;
  });
}

export interface DeliveryWithAttempts {
  delivery: WebhookDeliveryRow;
  attempts: WebhookAttemptRow[];
}

/** The webhook's most recent deliveries, newest first, each with its attempts in order. */
async function listDeliveries(db: Database, webhookId: WebhookId, limit: number): Promise<DeliveryWithAttempts[]> {
  const deliveries = await db
    .select()
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.webhookId, webhookId))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(limit);
  if (deliveries.length === 0) return [];
  const attempts = await db
    .select()
    .from(webhookAttempts)
    .where(
      inArray(
        webhookAttempts.deliveryId,
        deliveries.map((d) => d.id),
      ),
    )
    .orderBy(asc(webhookAttempts.attempt), asc(webhookAttempts.createdAt));
  const byDelivery = new Map<string, WebhookAttemptRow[]>();
  for (const attempt of attempts) {
    const list = byDelivery.get(attempt.deliveryId) ?? [];
    list.push(attempt);
    byDelivery.set(attempt.deliveryId, list);
  }
  return deliveries.map((delivery) => ({ delivery, attempts: byDelivery.get(delivery.id) ?? [] }));
}

/** `store.webhooks`. */
export const webhooksRepository = repository({
  db: { createWebhook, findWebhook, listWebhooks, disableWebhook, listDeliveries },
});
