import { and, asc, eq, gt, lte, sql, type SQL } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { events } from "../db/schema.js";
import type { EventBody, EventType, NewEvent, SessionEvent } from "../core/events.js";

/** The JSON array an event append takes: one item per event, in order. */
export function eventPayload(newEvents: readonly NewEvent[]): string {
  return JSON.stringify(
    newEvents.map((e) => ({
      runId: e.runId,
      stepIndex: e.step?.index ?? null,
      attempt: e.step?.attempt ?? null,
      type: e.body.type,
      data: e.body,
    })),
  );
}

/**
 * Two common table expressions that append events to a session's log inside a
 * larger statement: `event_seq_bump` bumps the session's counter and
 * `appended_events` inserts the rows, so sequence numbers are gap-free and
 * commit with whatever else the statement writes (SPEC D5). `payload` is a
 * jsonb array of `eventPayload` items; `when` makes the append conditional on
 * the rest of the statement (e.g. a fenced update having matched).
 * `appendedEventsJson` selects what was appended.
 */
export function appendEventsCte(sessionId: string, tenantId: string, payload: SQL, when?: SQL): SQL {
  return sql`
    event_payload as (select (${payload})::jsonb as items),
    event_seq_bump as (
      update sessions set event_seq = event_seq + jsonb_array_length(p.items)
      from event_payload p
      where sessions.id = ${sessionId} and jsonb_array_length(p.items) > 0 ${when ? sql`and ${when}` : sql``}
      returning sessions.event_seq, p.items
    ),
    appended_events as (
      insert into events (session_id, seq, tenant_id, run_id, step_index, attempt, type, data)
      select ${sessionId}, b.event_seq - jsonb_array_length(b.items) + e.ord, ${tenantId},
             e.value->>'runId', (e.value->>'stepIndex')::int, (e.value->>'attempt')::int,
             e.value->>'type', e.value->'data'
      from event_seq_bump b, jsonb_array_elements(b.items) with ordinality as e(value, ord)
      returning seq, run_id, step_index, attempt, type, data, created_at
    )`;
}

export const appendedEventsJson: SQL = sql`(select coalesce(jsonb_agg(to_jsonb(a.*)), '[]'::jsonb) from appended_events a)`;

/** Turns the rows of `appendedEventsJson` into events, in sequence order. */
export function toSessionEvents(sessionId: string, rows: readonly EventRow[]): SessionEvent[] {
  return rows.map((row) => toSessionEvent(sessionId, row)).sort((a, b) => a.seq - b.seq);
}

/** Appends events to a session's log in one statement, within the caller's transaction if any. */
export async function appendEvents(
  executor: DbExecutor,
  tenantId: string,
  sessionId: string,
  newEvents: readonly NewEvent[],
): Promise<SessionEvent[]> {
  if (newEvents.length === 0) return [];
  const result = await executor.execute<{ events: EventRow[] }>(sql`
    with ${appendEventsCte(sessionId, tenantId, sql`${eventPayload(newEvents)}`)}
    select ${appendedEventsJson} as events
  `);
  return toSessionEvents(sessionId, result.rows[0]?.events ?? []);
}

interface EventRow {
  seq: string | number;
  run_id: string;
  step_index: number | null;
  attempt: number | null;
  type: EventType;
  data: EventBody;
  created_at: Date | string;
}

function toSessionEvent(sessionId: string, row: EventRow): SessionEvent {
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
