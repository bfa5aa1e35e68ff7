import { and, asc, eq, gt, lte } from "drizzle-orm";
import { sql } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { events } from "../db/schema.js";
import type { EventBody, EventType, NewEvent, SessionEvent } from "../core/events.js";

/**
 * Appends events to a session's log in one statement: the session row's counter
 * is bumped and the rows inserted together, so sequence numbers are gap-free and
 * commit with the caller's transaction (SPEC D5).
 */
export async function appendEvents(
  executor: DbExecutor,
  tenantId: string,
  sessionId: string,
  newEvents: readonly NewEvent[],
): Promise<SessionEvent[]> {
  if (newEvents.length === 0) return [];
  const payload = JSON.stringify(
    newEvents.map((e) => ({
      runId: e.runId,
      stepIndex: e.step?.index ?? null,
      attempt: e.step?.attempt ?? null,
      type: e.body.type,
      data: e.body,
    })),
  );
  const count = newEvents.length;
  const result = await executor.execute<{
    seq: string;
    run_id: string;
    step_index: number | null;
    attempt: number | null;
    type: EventType;
    data: EventBody;
    created_at: Date | string;
  }>(sql`
    with bumped as (
      update sessions set event_seq = event_seq + ${count} where id = ${sessionId} returning event_seq
    )
    insert into events (session_id, seq, tenant_id, run_id, step_index, attempt, type, data)
    select ${sessionId}, bumped.event_seq - ${count} + e.ord, ${tenantId},
           e.value->>'runId', (e.value->>'stepIndex')::int, (e.value->>'attempt')::int,
           e.value->>'type', e.value->'data'
    from bumped, jsonb_array_elements(${payload}::jsonb) with ordinality as e(value, ord)
    returning seq, run_id, step_index, attempt, type, data, created_at
  `);
  return result.rows
    .map((row) => toSessionEvent(sessionId, row))
    .sort((a, b) => a.seq - b.seq);
}

function toSessionEvent(
  sessionId: string,
  row: {
    seq: string | number;
    run_id: string;
    step_index: number | null;
    attempt: number | null;
    type: EventType;
    data: EventBody;
    created_at: Date | string;
  },
): SessionEvent {
  return {
    seq: Number(row.seq),
    sessionId,
    runId: row.run_id,
    step: row.step_index === null || row.attempt === null ? null : { index: row.step_index, attempt: row.attempt },
    type: row.type,
    data: row.data,
    at: new Date(row.created_at).toISOString(),
  };
}

/** Events after `afterSeq`, oldest first; `upTo` bounds a gap fill. */
export async function readEvents(
  executor: DbExecutor,
  tenantId: string,
  sessionId: string,
  afterSeq: number,
  options: { limit?: number; upTo?: number } = {},
): Promise<SessionEvent[]> {
  const conditions = [eq(events.sessionId, sessionId), eq(events.tenantId, tenantId), gt(events.seq, afterSeq)];
  if (options.upTo !== undefined) conditions.push(lte(events.seq, options.upTo));
  const rows = await executor
    .select()
    .from(events)
    .where(and(...conditions))
    .orderBy(asc(events.seq))
    .limit(options.limit ?? 1000);
  return rows.map((row) =>
    toSessionEvent(sessionId, {
      seq: row.seq,
      run_id: row.runId,
      step_index: row.stepIndex,
      attempt: row.attempt,
      type: row.type,
      data: row.data,
      created_at: row.createdAt,
    }),
  );
}
