import { eq, sql } from "drizzle-orm";
import { storableText } from "../core/storable-text.js";
import type { WebhookDeliveryStatus } from "../core/statuses.js";
import type { WebhookPayload } from "../core/webhook-payload.js";
import type { Database, DbExecutor } from "../db/client.js";
import { webhookDeliveries, webhooks } from "../db/schema.js";
import { type DeliveryId, newId } from "../ids.js";
import { repository } from "./repository.js";

/**
 * Deletes finished deliveries (delivered or failed) created more than `retentionMs` ago,
 * with their attempts, oldest first, at most `limit` per call; pending ones are never
 * touched. Answers how many deliveries went. Several workers may prune at once: rows one
 * of them holds are skipped by the others.
 */
async function pruneWebhookDeliveries(db: Database, retentionMs: number, limit = 1000): Promise<number> {
  const result = await db.execute<{ pruned: number }>(sql`
    with old as (
      select id from webhook_deliveries
      where status <> 'pending' and created_at < now() - make_interval(secs => ${retentionMs / 1000})
      order by created_at
      limit ${limit}
      for update skip locked
    ),
    gone_attempts as (
      delete from webhook_attempts where delivery_id in (select id from old)
    ),
    gone as (
      delete from webhook_deliveries where id in (select id from old) returning id
    )
    select count(*)::int as pruned from gone
  `);
  return result.rows[0]?.pruned ?? 0;
}

/**
 * Claims up to `limit` pending deliveries nobody enqueued yet, oldest first, skipping rows another
 * worker holds (SPEC D7); the caller enqueues them before its transaction commits. Answers their ids.
 */
async function claimNewDeliveries(tx: DbExecutor, limit: number): Promise<Array<{ id: DeliveryId }>> {
  const claimed = await tx.execute<{ id: DeliveryId }>(sql`
      update webhook_deliveries set enqueued_at = now()
      where id in (
        select id from webhook_deliveries
        where status = 'pending' and enqueued_at is null
        order by created_at
        limit ${limit}
        for update skip locked)
      returning id
    `);
  return claimed.rows;
}

/** Claims up to `limit` deliveries still pending `staleMs` after they were enqueued, bumping `enqueued_at` (SPEC D7). Answers their ids. */
async function claimStaleDeliveries(db: Database, staleMs: number, limit: number): Promise<Array<{ id: DeliveryId }>> {
  const claimed = await db.execute<{ id: DeliveryId }>(sql`
    update webhook_deliveries set enqueued_at = now()
    where id in (
      select id from webhook_deliveries
      where status = 'pending' and enqueued_at < now() - make_interval(secs => ${staleMs / 1000})
      order by enqueued_at
      limit ${limit}
      for update skip locked)
    returning id
  `);
  return claimed.rows;
}

/** How one attempt went (webhooks/send-webhook.ts answers it). */
export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** What an attempt needs: the delivery, where it goes and how it is signed. */
export interface DeliveryToSend {
  id: DeliveryId;
  status: WebhookDeliveryStatus;
  attempts: number;
  payload: WebhookPayload;
  url: string;
  secret: string;
  webhookDisabled: boolean;
}

/** A delivery with its webhook's URL, secret and whether it was disabled (SPEC S4); null for none. */
async function loadDelivery(db: Database, deliveryId: DeliveryId): Promise<DeliveryToSend | null> {
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
async function recordAttempt(
  db: Database,
  input: { deliveryId: DeliveryId; outcome: AttemptOutcome; startedAt: Date; maxAttempts: number; lastJobAttempt: boolean },
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
async function abandonDelivery(db: Database, deliveryId: DeliveryId): Promise<void> {
  await db.execute(sql`update webhook_deliveries set status = 'failed' where id = ${deliveryId} and status = 'pending'`);
}

/** `store.webhookDeliveries`. */
export const webhookDeliveriesRepository = repository({
  db: { pruneWebhookDeliveries, claimNewDeliveries, claimStaleDeliveries, loadDelivery, recordAttempt, abandonDelivery },
});
