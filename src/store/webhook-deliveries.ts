import { sql } from "drizzle-orm";
import type { Database } from "../db/client.js";

/**
 * Deletes finished deliveries (delivered or failed) created more than `retentionMs` ago,
 * with their attempts, oldest first, at most `limit` per call; pending ones are never
 * touched. Answers how many deliveries went. Several workers may prune at once: rows one
 * of them holds are skipped by the others.
 */
export async function pruneWebhookDeliveries(db: Database, retentionMs: number, limit = 1000): Promise<number> {
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
