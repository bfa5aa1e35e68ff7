import { and, asc, eq, gt, lte } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { events, sessions } from "../db/schema.js";
import type { EventBody, EventType, NewEvent, SessionEvent } from "../core/events.js";
import { col, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import { repository } from "./repository.js";
import type { RunId, SessionId, TenantId } from "../ids.js";

/** The items of an event append: one per event, in order. */
export function eventItems(newEvents: readonly NewEvent[]): unknown[] {
  return newEvents.map((e) => ({
    runId: e.runId,
    stepIndex: e.step?.index ?? null,
    attempt: e.step?.attempt ?? null,
    type: e.body.type,
    data: e.body,
  }));
}

/** The JSON array an event append takes (`eventItems` as JSON text). */
export function eventPayload(newEvents: readonly NewEvent[]): string {
  return JSON.stringify(eventItems(newEvents));
}

const E = {
  sessionId: col(events.sessionId),
  seq: col(events.seq),
  tenantId: col(events.tenantId),
  runId: col(events.runId),
  stepIndex: col(events.stepIndex),
  attempt: col(events.attempt),
  type: col(events.type),
  data: col(events.data),
  createdAt: col(events.createdAt),
};

/**
 * Common table expressions that append events inside a larger statement:
 * `event_seq_bump` moves the session's counter by the number of events and
 * `appended_events` inserts them, so sequence numbers are gap-free and commit
 * with whatever else the statement writes (SPEC D5). The arguments name the
 * statement's parameters (`:sessionId`) holding the session id, the tenant id and the
 * `eventPayload` JSON; `when` is a condition on the rest of the statement (a
 * fenced update having matched). `appendedEventsColumn` selects the result.
 */
export function appendEventsText(params: { sessionId: string; tenantId: string; payload: string }, when?: string): string {
  return `
    event_payload as (select (${params.payload})::jsonb as items),
    event_seq_bump as (
      update ${tbl(sessions)} set ${col(sessions.eventSeq)} = ${col(sessions.eventSeq)} + jsonb_array_length(p.items)
      from event_payload p
      where ${tbl(sessions)}.${col(sessions.id)} = ${params.sessionId} and jsonb_array_length(p.items) > 0 ${when ? `and ${when}` : ""}
      returning ${tbl(sessions)}.${col(sessions.eventSeq)} as event_seq, p.items
    ),
    ${appendedEventsText({ sessionId: params.sessionId, tenantId: params.tenantId, lastSeq: "b.event_seq" })}`;
}

/**
 * `appended_events`: the rows of `event_seq_bump`'s items (`b.items`), numbered back from the
 * session's counter after the bump (`lastSeq`). One text for one session's append and many.
 */
export function appendedEventsText(values: { sessionId: string; tenantId: string; lastSeq: string }): string {
  return `appended_events as (
      insert into ${tbl(events)} (${E.sessionId}, ${E.seq}, ${E.tenantId}, ${E.runId}, ${E.stepIndex}, ${E.attempt}, ${E.type}, ${E.data})
      select ${values.sessionId}, ${values.lastSeq} - jsonb_array_length(b.items) + e.ord, ${values.tenantId},
             e.value->>'runId', (e.value->>'stepIndex')::int, (e.value->>'attempt')::int,
             e.value->>'type', e.value->'data'
      from event_seq_bump b, jsonb_array_elements(b.items) with ordinality as e(value, ord)
    )`;
}

/**
 * `appendEventsText` for a statement of many rows: each row of `rows` (a CTE with columns `n`,
 * `session_id`, `tenant_id` and `events`, the row's `eventItems`) appends its own events to its
 * own session. A statement gives each session at most one row: its bump is one update of the
 * session's counter (SPEC D5). `event_seq_bump` returns each row's `n` and the session's last
 * sequence number after it (`last_seq`).
 */
export function appendEventsPerRowText(rows: string): string {
  return `
    event_seq_bump as (
      update ${tbl(sessions)} set ${col(sessions.eventSeq)} = ${col(sessions.eventSeq)} + jsonb_array_length(r.events)
      from ${rows} r
      where ${tbl(sessions)}.${col(sessions.id)} = r.session_id and jsonb_array_length(r.events) > 0
      returning r.n, ${tbl(sessions)}.${col(sessions.eventSeq)} as last_seq, r.events as items, r.session_id, r.tenant_id
    ),
    ${appendedEventsText({ sessionId: "b.session_id", tenantId: "b.tenant_id", lastSeq: "b.last_seq" })}`;
}

/**
 * Selects what `appendEventsText` did: the session's last sequence number after it (null when
 * nothing was appended) and the time the rows carry. The events themselves are known to the
 * caller, so nothing is sent back (`appendedEvents` numbers them).
 */
export const appendedColumns = `(select event_seq from event_seq_bump)::float8 as last_seq, now() as appended_at`;

/** The columns `appendedColumns` selects. */
export interface AppendedRow {
  last_seq: number | null;
  appended_at: Date;
}

/** The events a statement appended, numbered from the session's last sequence number; none when it appended nothing. */
export function appendedEvents(sessionId: SessionId, newEvents: readonly NewEvent[], row: AppendedRow | undefined): SessionEvent[] {
  if (!row || row.last_seq === null || newEvents.length === 0) return [];
  const first = row.last_seq - newEvents.length + 1;
  const at = row.appended_at.toISOString();
  return newEvents.map((event, index) => ({
    seq: first + index,
    sessionId,
    runId: event.runId,
    step: event.step,
    type: event.body.type,
    data: event.body,
    at,
  }));
}

/** One event row as read back. */
interface EventRow {
  seq: string | number;
  run_id: RunId;
  step_index: number | null;
  attempt: number | null;
  type: EventType;
  data: EventBody;
  created_at: Date | string;
}

/**
 * appendEvents
 * Guard: none; the caller's transaction (or a fenced statement) decides whether the events belong.
 * Params: session, tenant, events in order.
 * Result: the events with their sequence numbers.
 */
const append = statement<{ sessionId: SessionId; tenantId: TenantId; events: string }, AppendedRow>(
  "append_events",
  `with ${appendEventsText({ sessionId: ":sessionId", tenantId: ":tenantId", payload: ":events" })} select ${appendedColumns}`,
);

export async function appendEvents(
  on: Queryable,
  tenantId: TenantId,
  sessionId: SessionId,
  newEvents: readonly NewEvent[],
): Promise<SessionEvent[]> {
  if (newEvents.length === 0) return [];
  const [row] = await run(on, append, { sessionId, tenantId, events: eventPayload(newEvents) });
  return appendedEvents(sessionId, newEvents, row);
}

function toSessionEvent(sessionId: SessionId, row: EventRow): SessionEvent {
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
async function readEvents(
  executor: DbExecutor,
  tenantId: TenantId,
  sessionId: SessionId,
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

/** `store.events`. */
export const eventsRepository = repository({
  db: { readEvents },
  pg: { appendEvents },
});
