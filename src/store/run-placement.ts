import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { NewEvent, SessionEvent } from "../core/events.js";
import type { HistoryMessage } from "../core/history.js";
import type { NextJob } from "../core/next-job.js";
import type { Database } from "../db/client.js";
import { events, messages, runs, sessions, tenants, toolCalls } from "../db/schema.js";
import { type MessageId, type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import type { OnInterrupted } from "../core/session.js";
import { appendedEvents, type AppendedRow } from "./events.js";
import { run, statement } from "./named-sql.js";
import type { RunRow } from "./run-rows.js";
import { col, rowOf, tbl, type Queryable } from "./sql-text.js";
import { workingRunText } from "./tenant-admission.js";

/**
 * A run's place in its session (SPEC X6): created `queued`, given its ordinal and first job when
 * it becomes the session's active run, and the session's slot released when it ends.
 */

/** insertRun: a new run, `queued`, with no place in history yet. */
export async function insertRun(
  tx: Database,
  values: { tenantId: TenantId; sessionId: SessionId; input: string; onInterrupted?: RunRow["onInterrupted"] },
): Promise<RunRow> {
  const [row] = await tx
    .insert(runs)
    .values({ id: newId("run"), ...values, status: "queued" })
    .returning();
  if (!row) throw new Error("run insert returned nothing");
  return row;
}

/**
 * placeRun
 * Guard: the run has no place yet (a run placed twice is a bug: it throws). Result: its ordinal in the session.
 * Makes the run the session's active run and records its first step job (the outbox).
 */
export async function placeRun(tx: Database, queued: { id: RunId; sessionId: SessionId }): Promise<{ ordinal: number; next: NextJob }> {
  const [session] = await tx
    .update(sessions)
    .set({ runCount: sql`${sessions.runCount} + 1`, activeRunId: queued.id })
    .where(eq(sessions.id, queued.sessionId))
    .returning({ runCount: sessions.runCount });
  if (!session) throw new Error(`session ${queued.sessionId} vanished`);
  const next: NextJob = { kind: "step", stepIndex: 0 };
  const placed = await tx
    .update(runs)
    .set({ ordinal: session.runCount, nextJob: next, redispatches: 0, updatedAt: sql`now()` })
    .where(and(eq(runs.id, queued.id), isNull(runs.ordinal)))
    .returning({ id: runs.id });
  if (placed.length === 0) throw new Error(`run ${queued.id} already has a place`);
  return { ordinal: session.runCount, next };
}

/**
 * The CTEs that start an activated run's history, for a statement that placed it: its user message
 * and its `run_start`, numbered `eventSeq` (the session's counter, moved by the statement's own
 * update of the session). `from` names the rows that hold `ordinal` and `eventSeq`, and `when`
 * the condition of an activation.
 */
function runStartText(from: string, ordinal: string, eventSeq: string, when: string): string {
  return `user_message as (
     insert into ${tbl(messages)} (${col(messages.id)}, ${col(messages.tenantId)}, ${col(messages.sessionId)}, ${col(messages.runId)},
       ${col(messages.runOrdinal)}, ${col(messages.stepIndex)}, ${col(messages.part)}, ${col(messages.callIndex)}, ${col(messages.role)}, ${col(messages.content)})
     select :messageId, :tenantId, :sessionId, :runId, ${ordinal}, -1, 0, 0, 'user', :message::jsonb from ${from} where ${when}
     on conflict do nothing
   ),
   run_start as (
     insert into ${tbl(events)} (${col(events.sessionId)}, ${col(events.seq)}, ${col(events.tenantId)}, ${col(events.runId)},
       ${col(events.stepIndex)}, ${col(events.attempt)}, ${col(events.type)}, ${col(events.data)})
     select :sessionId, ${eventSeq}, :tenantId, :runId, null, null, 'run_start',
       jsonb_build_object('type', 'run_start', 'runId', :runId::text, 'ordinal', ${ordinal})
     from ${from} where ${when}
   )`;
}

/** The activated run's first job, and its `run_start` as the statement numbered it. */
function activated(run: { id: RunId; sessionId: SessionId }, ordinal: number, row: AppendedRow): { next: NextJob; events: SessionEvent[] } {
  const started: NewEvent = { runId: run.id, step: null, body: { type: "run_start", runId: run.id, ordinal } };
  return { next: firstJob, events: appendedEvents(run.sessionId, [started], row) };
}

const firstJob: NextJob = { kind: "step", stepIndex: 0 };

/**
 * activateRun
 * Guard: the run has no place yet (a run placed twice is a bug: it throws); the caller's transaction
 * decided it may start (a free slot, SPEC X5). Params: the run, its input.
 * Result: its ordinal, its first job and its `run_start` event; nothing written for a run placed
 * already. In one statement what `placeRun`,
 * the user message's insert and the event's append did in four round trips: the session's run
 * count, active run and event counter move in one update (a statement may update a row once).
 */
const activateRunStatement = statement<
  { runId: RunId; tenantId: TenantId; sessionId: SessionId; next: string; messageId: MessageId; message: string },
  { ordinal: number | null } & AppendedRow
>(
  "activate_run",
  `with placed_session as (
     update ${tbl(sessions)} set ${col(sessions.runCount)} = ${col(sessions.runCount)} + 1, ${col(sessions.activeRunId)} = :runId,
       ${col(sessions.eventSeq)} = ${col(sessions.eventSeq)} + 1
     where ${col(sessions.id)} = :sessionId
       and exists (select 1 from ${tbl(runs)} r where r.${col(runs.id)} = :runId and r.${col(runs.ordinal)} is null)
     returning ${col(sessions.runCount)} as run_count, ${col(sessions.eventSeq)} as event_seq
   ),
   placed_run as (
     update ${tbl(runs)} set ${col(runs.ordinal)} = (select run_count from placed_session), ${col(runs.nextJob)} = :next::jsonb,
       ${col(runs.redispatches)} = 0, ${col(runs.updatedAt)} = now()
     where ${col(runs.id)} = :runId and ${col(runs.ordinal)} is null and exists (select 1 from placed_session)
     returning ${col(runs.ordinal)} as ordinal
   ),
   ${runStartText("placed_session s, placed_run p", "p.ordinal", "s.event_seq", "true")}
   select (select ordinal from placed_run) as ordinal,
     (select event_seq from placed_session where exists (select 1 from placed_run))::float8 as last_seq, now() as appended_at`,
);

export async function activateRun(
  on: Queryable,
  queued: Pick<RunRow, "id" | "tenantId" | "sessionId" | "input">,
): Promise<{ ordinal: number; next: NextJob; events: SessionEvent[] }> {
  const message: HistoryMessage = { role: "user", text: queued.input };
  const [row] = await run(on, activateRunStatement, {
    runId: queued.id,
    tenantId: queued.tenantId,
    sessionId: queued.sessionId,
    next: JSON.stringify(firstJob),
    messageId: newId("msg"),
    message: JSON.stringify(message),
  });
  if (!row || row.ordinal === null) throw new Error(`run ${queued.id} has a place already, or its session vanished`);
  return { ordinal: row.ordinal, ...activated(queued, row.ordinal, row) };
}

/**
 * acceptRun
 * Guard: the session is live, of the tenant, and has no active run (else nothing is written and
 * nothing answered: the caller reads again). Params: the new run; the deployment's activeRuns quota.
 * Result: the run, activated when its tenant has a free slot (SPEC X5: its quota, its own override
 * else the deployment's, less its working runs) with its place, first job, user message and
 * `run_start`, else holding its session's slot without a place. In one statement what locking the
 * session, inserting the run, counting the free slots and `activateRun` or `holdSessionSlot` did in
 * four round trips; the session's row is updated once (its active run, and when activated its run
 * count and event counter), which also locks it.
 */
const acceptRunStatement = statement<
  {
    runId: RunId;
    tenantId: TenantId;
    sessionId: SessionId;
    input: string;
    onInterrupted: OnInterrupted | null;
    deploymentActiveRuns: number;
    next: string;
    messageId: MessageId;
    message: string;
  },
  RunRow & { last_seq: number | null; appended_at: Date }
>(
  "accept_run",
  `with free as (
     select coalesce((select (t.${col(tenants.quotas)} ->> 'activeRuns')::int from ${tbl(tenants)} t where t.${col(tenants.id)} = :tenantId),
         :deploymentActiveRuns::int)
       - (select count(*)::int from ${tbl(runs)} r where r.${col(runs.tenantId)} = :tenantId and ${workingRunText("r")}) > 0 as has_slot
   ),
   taken_session as (
     update ${tbl(sessions)} set ${col(sessions.activeRunId)} = :runId,
       ${col(sessions.runCount)} = ${col(sessions.runCount)} + case when (select has_slot from free) then 1 else 0 end,
       ${col(sessions.eventSeq)} = ${col(sessions.eventSeq)} + case when (select has_slot from free) then 1 else 0 end
     where ${col(sessions.id)} = :sessionId and ${col(sessions.tenantId)} = :tenantId and ${col(sessions.deletedAt)} is null
       and ${col(sessions.activeRunId)} is null
     returning ${col(sessions.runCount)} as run_count, ${col(sessions.eventSeq)} as event_seq,
       ${col(sessions.onInterrupted)} as on_interrupted, (select has_slot from free) as has_slot
   ),
   new_run as (
     insert into ${tbl(runs)} (${col(runs.id)}, ${col(runs.tenantId)}, ${col(runs.sessionId)}, ${col(runs.input)}, ${col(runs.onInterrupted)},
       ${col(runs.status)}, ${col(runs.ordinal)}, ${col(runs.nextJob)}, ${col(runs.redispatches)})
     select :runId, :tenantId, :sessionId, :input, coalesce(:onInterrupted::text, s.on_interrupted), 'queued',
       case when s.has_slot then s.run_count end, case when s.has_slot then :next::jsonb end, 0
     from taken_session s
     returning *
   ),
   ${runStartText("taken_session s, new_run n", `n.${col(runs.ordinal)}`, "s.event_seq", `n.${col(runs.ordinal)} is not null`)}
   select ${rowOf(runs, "n")},
     case when n.${col(runs.ordinal)} is not null then s.event_seq end::float8 as last_seq, now() as appended_at
   from new_run n, taken_session s`,
);

export type AcceptedRun =
  | { kind: "activated"; run: RunRow & { ordinal: number }; next: NextJob; events: SessionEvent[] }
  | { kind: "holding"; run: RunRow };

/** Undefined when the session is gone, another tenant's, or has an active run now. */
export async function acceptRun(
  on: Queryable,
  values: { tenantId: TenantId; sessionId: SessionId; input: string; onInterrupted?: OnInterrupted },
  deploymentActiveRuns: number,
): Promise<AcceptedRun | undefined> {
  const runId = newId("run");
  const message: HistoryMessage = { role: "user", text: values.input };
  const [row] = await run(on, acceptRunStatement, {
    runId,
    tenantId: values.tenantId,
    sessionId: values.sessionId,
    input: values.input,
    onInterrupted: values.onInterrupted ?? null,
    deploymentActiveRuns,
    next: JSON.stringify(firstJob),
    messageId: newId("msg"),
    message: JSON.stringify(message),
  });
  if (!row) return undefined;
  const { last_seq, appended_at, ...runRow } = row;
  if (runRow.ordinal === null) return { kind: "holding", run: runRow };
  const ordinal = runRow.ordinal;
  return { kind: "activated", run: { ...runRow, ordinal }, ...activated(runRow, ordinal, { last_seq, appended_at }) };
}

/**
 * afterRunEnd
 * Guard: none (reads, after `finishRun` in the same transaction, so a turn accepted behind the run
 * before its end is seen). Params: the ended run. Result: what the run's end leaves to do: a
 * parent's call waits for this run (A1), a run waits behind it in its session (X6), runs of its
 * tenant wait for a slot (X5). With none, ending a run costs no further statement.
 */
const afterRunEndStatement = statement<
  { runId: RunId; tenantId: TenantId; sessionId: SessionId },
  { parent_waits: boolean; session_waits: boolean; tenant_waits: boolean }
>(
  "after_run_end",
  `select exists (select 1 from ${tbl(toolCalls)} tc where tc.${col(toolCalls.childRunId)} = :runId and tc.${col(toolCalls.status)} = 'running') as parent_waits,
     exists (select 1 from ${tbl(runs)} r where r.${col(runs.sessionId)} = :sessionId and r.${col(runs.status)} = 'queued' and r.${col(runs.ordinal)} is null) as session_waits,
     exists (select 1 from ${tbl(runs)} r join ${tbl(sessions)} s on s.${col(sessions.id)} = r.${col(runs.sessionId)} and s.${col(sessions.activeRunId)} = r.${col(runs.id)}
             where r.${col(runs.tenantId)} = :tenantId and r.${col(runs.status)} = 'queued' and r.${col(runs.ordinal)} is null) as tenant_waits`,
);

export interface AfterRunEnd {
  parentWaits: boolean;
  sessionWaits: boolean;
  tenantWaits: boolean;
}

export async function afterRunEnd(on: Queryable, ended: { id: RunId; tenantId: TenantId; sessionId: SessionId }): Promise<AfterRunEnd> {
  const [row] = await run(on, afterRunEndStatement, { runId: ended.id, tenantId: ended.tenantId, sessionId: ended.sessionId });
  return { parentWaits: row?.parent_waits === true, sessionWaits: row?.session_waits === true, tenantWaits: row?.tenant_waits === true };
}

/**
 * lockNextInSession
 * Guard: none (the caller released the session's slot). Result: the oldest run waiting in the
 * session (locked), which moves up now.
 */
export async function lockNextInSession(tx: Database, sessionId: SessionId): Promise<RunRow | undefined> {
  const [waiting] = await tx
    .select()
    .from(runs)
    .where(and(eq(runs.sessionId, sessionId), eq(runs.status, "queued"), isNull(runs.ordinal)))
    .orderBy(asc(runs.createdAt))
    .limit(1)
    .for("update");
  return waiting;
}
