import { and, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import type { NextJob } from "../core/next-job.js";
import { runStatusesLeadingTo, type TerminalRunStatus } from "../core/run-status.js";
import type { Database } from "../db/client.js";
import type { NewEvent, SessionEvent } from "../core/events.js";
import { runs, sessions } from "../db/schema.js";
import { appendedEvents, appendedEventsText, eventPayload, type AppendedRow } from "./events.js";
import { run, statement } from "./named-sql.js";
import { clientOf, col, tbl, type Queryable } from "./sql-text.js";
import type { RunId, SessionId, TenantId } from "../ids.js";

/**
 * Transitions of `runs` (SPEC D2, D4). Each is one guarded statement; the guard is the run's
 * fence where a job owns the run, and the statuses `runStatusesLeadingTo` allows where its
 * status changes. Each transition has one text: a statement that makes it inside a larger one
 * (`answer_calls` hands runs on) uses the text below, not a copy.
 */

const R = {
  id: col(runs.id),
  status: col(runs.status),
  fence: col(runs.fence),
  nextJob: col(runs.nextJob),
  activatedTools: col(runs.activatedTools),
};

/** The guard of a run a job holds: its fence, and the run still running. */
export function heldBy(held: { id: RunId; fence: number }): SQL | undefined {
  return and(eq(runs.id, held.id), eq(runs.fence, held.fence), eq(runs.status, "running"));
}

/** Where `handOffText` takes its values: the statement's named parameters, or the columns of rows it joins. */
export interface HandOffSource {
  /** A FROM list the update joins (rows of a multi-row statement); none for parameters. */
  from?: string;
  runId: string;
  runFence: string;
  currentJob: string;
  nextJob: string;
  nextStepIndex: string;
  /** What the update returns: the run's id for parameters. */
  returning: string;
}

const fromParams: HandOffSource = {
  runId: ":runId",
  runFence: ":runFence",
  currentJob: ":currentJob::jsonb",
  nextJob: ":nextJob::jsonb",
  nextStepIndex: ":nextStepIndex",
  returning: `${tbl(runs)}.${R.id}`,
};

/**
 * handOff: "hand the run to its next step", the one text of that transition.
 * Guard: the holder's fence, run running, and the run still on the job this holder claimed
 * (`next_job`), and `when`. Params: `HandOffParams` (or the columns `source` names, one
 * hand-off per row). Returns the run's id when it moved.
 * The step job of `nextStepIndex` becomes the run's next job (the outbox) and the lease is released.
 */
export function handOffText(when = "true", source: HandOffSource = fromParams): string {
  return `update ${tbl(runs)} set ${col(runs.stepIndex)} = ${source.nextStepIndex}, ${R.nextJob} = ${source.nextJob}, ${col(runs.redispatches)} = 0,
       ${col(runs.leaseOwner)} = null, ${col(runs.leaseUntil)} = null, ${col(runs.updatedAt)} = now()
     ${source.from ? `from ${source.from}` : ""}
     where ${tbl(runs)}.${R.id} = ${source.runId} and ${tbl(runs)}.${R.fence} = ${source.runFence} and ${tbl(runs)}.${R.status} = 'running'
       and ${tbl(runs)}.${R.nextJob} = ${source.currentJob}
       and ${when}
     returning ${source.returning}`;
}

/** The parameters `handOffText` names; `null` everywhere when no hand-off is asked (the text's `when` then refuses it). */
export interface HandOffParams {
  runId: RunId;
  runFence: number | null;
  /** The run's job now and the step job it moves to (JSON). */
  currentJob: string | null;
  nextJob: string | null;
  nextStepIndex: number | null;
}

/** What a holder asks for to hand its run on. */
export interface HandOff {
  fence: number;
  current: NextJob | null;
  next: Extract<NextJob, { kind: "step" }>;
}

/** `HandOffParams` of a hand-off, or of none. */
export function handOffParams(runId: RunId, handOff: HandOff | undefined): HandOffParams {
  return {
    runId,
    runFence: handOff?.fence ?? null,
    currentJob: handOff ? JSON.stringify(handOff.current) : null,
    nextJob: handOff ? JSON.stringify(handOff.next) : null,
    nextStepIndex: handOff?.next.stepIndex ?? null,
  };
}

/**
 * moveToNextStep
 * Guard: `handOffText`'s. Params: `HandOffParams`. Result: the step job, or undefined when the run did not move.
 */
const moveToNextStepStatement = statement<HandOffParams, { id: RunId }>("move_to_next_step", handOffText());

export async function moveToNextStep(
  tx: Database,
  held: { id: RunId; fence: number; nextJob: NextJob | null },
  nextIndex: number,
): Promise<NextJob | undefined> {
  const next: NextJob = { kind: "step", stepIndex: nextIndex };
  const moved = await run(
    clientOf(tx),
    moveToNextStepStatement,
    handOffParams(held.id, { fence: held.fence, current: held.nextJob, next }),
  );
  return moved.length > 0 ? next : undefined;
}

/**
 * parkRun
 * Guard: fence, running, and `status` reachable from running. Result: whether it parked.
 * The run waits with no job and no lease: for a decision (`awaiting_approval`, D6) or for sub-agents (`running`, A1).
 */
export async function parkRun(tx: Database, held: { id: RunId; fence: number }, status: "awaiting_approval" | "running"): Promise<boolean> {
  if (status !== "running" && !runStatusesLeadingTo(status).includes("running")) throw new Error(`a running run cannot become ${status}`);
  const parked = await tx
    .update(runs)
    .set({ status, nextJob: null, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(heldBy(held))
    .returning({ id: runs.id });
  return parked.length > 0;
}

/**
 * resumeParkedRun
 * Guard: no job, and a status from which `running` is reached or `running` itself (parked on sub-agents).
 * Result: the batch job to dispatch, or undefined when the run was not parked.
 */
export async function resumeParkedRun(tx: Database, parked: { id: RunId; fence: number }, stepIndex: number): Promise<NextJob | undefined> {
  // The fence names the parked attempt, so each resume gets a job id of its own.
  const next: NextJob = { kind: "batch", stepIndex, resume: parked.fence };
  const [resumed] = await tx
    .update(runs)
    .set({ status: "running", nextJob: next, redispatches: 0, updatedAt: sql`now()` })
    .where(
      and(
        eq(runs.id, parked.id),
        inArray(runs.status, ["running", ...runStatusesLeadingTo("running").filter((s) => s !== "queued")]),
        isNull(runs.nextJob),
      ),
    )
    .returning({ id: runs.id });
  return resumed ? next : undefined;
}

/**
 * finishRun
 * Guard: a status from which `status` is reached (`runStatusesLeadingTo`), and the fence when given.
 * Params: the run, its end status and error, and its `run_end` (`eventPayload` JSON).
 * Result: null when the run did not end here; else its `run_end` as appended, and whether the
 * session's slot was the run's and is released here (`released`), and whether the session is
 * deleted. Bumps the fence, so no job of the run can commit after. One statement: the run's end,
 * its event and the session's slot (the session's row updated once: its counter and its slot).
 */
const finishRunStatement = statement<
  {
    runId: RunId;
    tenantId: TenantId;
    sessionId: SessionId;
    status: TerminalRunStatus;
    fromStatuses: string[];
    fence: number | null;
    error: string | null;
    events: string;
  },
  { ended: number; released: boolean | null; gone: boolean | null } & AppendedRow
>(
  "finish_run",
  `with ended as (
     update ${tbl(runs)} set ${R.status} = :status, ${R.nextJob} = null, ${col(runs.leaseOwner)} = null, ${col(runs.leaseUntil)} = null,
       ${R.fence} = ${tbl(runs)}.${R.fence} + 1, ${col(runs.error)} = :error::jsonb, ${col(runs.endedAt)} = now(), ${col(runs.updatedAt)} = now()
     where ${tbl(runs)}.${R.id} = :runId and ${tbl(runs)}.${R.status} = any(:fromStatuses::text[])
       and (:fence::int8 is null or ${tbl(runs)}.${R.fence} = :fence::int8)
     returning ${tbl(runs)}.${R.id}
   ),
   slot as (
     select s.${col(sessions.id)} as id, s.${col(sessions.activeRunId)} is not distinct from :runId as held, s.${col(sessions.deletedAt)} is not null as gone
     from ${tbl(sessions)} s where s.${col(sessions.id)} = :sessionId and exists (select 1 from ended)
     for update
   ),
   event_seq_bump as (
     update ${tbl(sessions)} set ${col(sessions.eventSeq)} = ${tbl(sessions)}.${col(sessions.eventSeq)} + jsonb_array_length(:events::jsonb),
       ${col(sessions.activeRunId)} = case when slot.held then null else ${tbl(sessions)}.${col(sessions.activeRunId)} end
     from slot where ${tbl(sessions)}.${col(sessions.id)} = slot.id
     returning ${tbl(sessions)}.${col(sessions.eventSeq)} as event_seq, :events::jsonb as items, slot.held, slot.gone
   ),
   ${appendedEventsText({ sessionId: ":sessionId", tenantId: ":tenantId", lastSeq: "b.event_seq" })}
   select (select count(*) from ended)::int as ended, (select event_seq from event_seq_bump)::float8 as last_seq, now() as appended_at,
     (select held from event_seq_bump) as released, (select gone from event_seq_bump) as gone`,
);

/** A run ended by `finishRun`: its `run_end`, and what became of its session's slot. */
export interface FinishedRun {
  events: SessionEvent[];
  /** The run held its session's slot and gave it back here. */
  released: boolean;
  /** The session is deleted: nothing waiting in it moves up. */
  sessionGone: boolean;
}

export async function finishRun(
  on: Queryable,
  ending: { id: RunId; tenantId: TenantId; sessionId: SessionId },
  status: TerminalRunStatus,
  options: { fence?: number; error?: { code: string; message: string } },
): Promise<FinishedRun | null> {
  const end: NewEvent[] = [
    { runId: ending.id, step: null, body: { type: "run_end", status, ...(options.error ? { error: options.error } : {}) } },
  ];
  const [row] = await run(on, finishRunStatement, {
    runId: ending.id,
    tenantId: ending.tenantId,
    sessionId: ending.sessionId,
    status,
    fromStatuses: [...runStatusesLeadingTo(status)],
    fence: options.fence ?? null,
    error: options.error ? JSON.stringify(options.error) : null,
    events: eventPayload(end),
  });
  if (!row || row.ended === 0) return null;
  return { events: appendedEvents(ending.sessionId, end, row), released: row.released === true, sessionGone: row.gone === true };
}

/**
 * addActivatedTools
 * Guard: the batch's fence, run running. Params: the run, its fence, the tool names (JSON).
 * Result: none; the names join the run's sorted, distinct list of activated deferred tools (R5).
 */
const addActivatedToolsStatement = statement<{ runId: RunId; fence: number; names: string }>(
  "add_activated_tools",
  `update ${tbl(runs)} set ${R.activatedTools} = (
     select coalesce(jsonb_agg(distinct name order by name), '[]'::jsonb)
     from jsonb_array_elements_text(${R.activatedTools} || :names::jsonb) as name)
   where ${R.id} = :runId and ${R.fence} = :fence and ${R.status} = 'running'`,
);

export async function addActivatedTools(on: Queryable, held: { id: RunId; fence: number }, names: readonly string[]): Promise<void> {
  await run(on, addActivatedToolsStatement, { runId: held.id, fence: held.fence, names: JSON.stringify(names) });
}

/**
 * countInterruption
 * Guard: the batch's fence, run running, fewer than `limit` interruptions so far. Params: the run,
 * its fence, the limit. Result: the run's new count, or undefined when it may not go on (D10).
 */
const countInterruptionStatement = statement<{ runId: RunId; fence: number; limit: number }, { interruptions: number }>(
  "count_interruption",
  `update ${tbl(runs)} set ${col(runs.interruptions)} = ${col(runs.interruptions)} + 1
   where ${R.id} = :runId and ${R.fence} = :fence and ${R.status} = 'running' and ${col(runs.interruptions)} < :limit
   returning ${col(runs.interruptions)} as "interruptions"`,
);

export async function countInterruption(on: Queryable, held: { id: RunId; fence: number }, limit: number): Promise<number | undefined> {
  const [row] = await run(on, countInterruptionStatement, { runId: held.id, fence: held.fence, limit });
  return row?.interruptions;
}
