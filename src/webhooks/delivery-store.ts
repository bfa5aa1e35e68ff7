import { eq, sql } from "drizzle-orm";
import { storableText } from "../core/storable-text.js";
import type { Database } from "../db/client.js";
import { webhookDeliveries, webhooks } from "../db/schema.js";
import { newId } from "../ids.js";
import type { SendOutcome } from "./send-webhook.js";
import type { WebhookPayload } from "./webhook-payload.js";
import type { WebhookDeliveryStatus } from "../core/statuses.js";

/** What an attempt needs: the delivery, where it goes and how it is signed. */
export interface DeliveryToSend {
  id: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  payload: WebhookPayload;
  url: string;
  secret: string;
  webhookDisabled: boolean;
}

export async function loadDelivery(db: Database, deliveryId: string): Promise<DeliveryToSend | null> {
  const [row] = await db
    .select({
      id: webhookDeliveries.id,
      status: webhookDeliveries.status,
      attempts: webhookDeliveries.attempts,
      payload: webhookDeliveries.payload,
      url: webhooks.url,
      secret: webhooks.secret,
      disabledAt: webhooks.disabledAt,
    })
    .from(webhookDeliveries)
    .innerJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(eq(webhookDeliveries.id, deliveryId));
  if (!row) return null;
  const { disabledAt, payload, ...rest } = row;
  return { ...rest, payload: payload as unknown as WebhookPayload, webhookDisabled: disabledAt !== null };
}

export interface RecordedAttempt {
  attempt: number;
  status: WebhookDeliveryStatus;
}

/**
 * Records one attempt and the delivery's new status in one statement: delivered
 * on a 2xx, failed when this was the last attempt allowed, else still pending.
 * Answers null when the delivery was no longer pending (a duplicate job got there first).
 */
export async function recordAttempt(
  db: Database,
  input: { deliveryId: string; outcome: SendOutcome; startedAt: Date; maxAttempts: number; lastJobAttempt: boolean },
): Promise<RecordedAttempt | null> {
  const { deliveryId, outcome } = input;
  const error = outcome.error === null ? null : storableText(outcome.error).slice(0, 1000);
  const result = await db.execute<{ attempt: number; status: WebhookDeliveryStatus }>(sql`
    with d as (
      update webhook_deliveries
      set attempts = attempts + 1,
          status = case
            when ${outcome.ok}::boolean then 'delivered'
            when attempts + 1 >= ${input.maxAttempts}::int or ${input.lastJobAttempt}::boolean then 'failed'
            else 'pending' end,
          delivered_at = case when ${outcome.ok}::boolean then now() end
      where id = ${deliveryId} and status = 'pending'
      returning tenant_id, attempts, status
    ), a as (
      insert into webhook_attempts (id, tenant_id, delivery_id, attempt, status_code, error, duration_ms, created_at)
      select ${newId("wha")}, tenant_id, ${deliveryId}, attempts, ${outcome.statusCode}::int, ${error}::text, ${outcome.durationMs}::int,
             ${input.startedAt.toISOString()}::timestamptz
      from d
    )
    select attempts as attempt, status from d
  `);
  return result.rows[0] ?? null;
}

/** A delivery of a disabled webhook is not sent any more. */
export async function abandonDelivery(db: Database, deliveryId: string): Promise<void> {
  await db.execute(sql`update webhook_deliveries set status = 'failed' where id = ${deliveryId} and status = 'pending'`);
}
