import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import { toolEndEvent, toolMessageOf, type CallOutcome } from "../core/call-outcome.js";
import type { NewEvent, SessionEvent, StepRef } from "../core/events.js";
import { openToolCallStatuses, toolCallStatusesLeadingTo } from "../core/tool-call-status.js";
import type { Database } from "../db/client.js";
import { approvals, fileChanges, messages, runs, toolCalls } from "../db/schema.js";
import { newId } from "../ids.js";
import { resultPreview } from "./result-preview.js";
import { appendedColumns, appendedEvents, appendEventsText, eventPayload, type AppendedRow } from "./events.js";
import type { CallRow } from "./runs.js";
import { col, literals, run, statement, tbl, type Queryable } from "./sql-text.js";
import type { NextJob } from "../core/next-job.js";
import type { FileChangeRecord } from "../core/file-change-record.js";

/**
 * Transitions of `tool_calls` (SPEC D2, D3). `running` is written before a tool
 * starts; a terminal status is written with the call's tool message and its
 * `tool_end` event by `answerCall`, the one statement that answers a call.
 */

const C = {
  id: col(toolCalls.id),
  runId: col(toolCalls.runId),
  stepIndex: col(toolCalls.stepIndex),
  status: col(toolCalls.status),
  execFence: col(toolCalls.execFence),
  executedBy: col(toolCalls.executedBy),
  startedAt: col(toolCalls.startedAt),
  result: col(toolCalls.result),
  isError: col(toolCalls.isError),
  errorCode: col(toolCalls.errorCode),
  endedAt: col(toolCalls.endedAt),
};
const R = { id: col(runs.id), fence: col(runs.fence), status: col(runs.status), nextJob: col(runs.nextJob) };
const M = [
  messages.id,
  messages.tenantId,
  messages.sessionId,
  messages.runId,
  messages.runOrdinal,
  messages.stepIndex,
  messages.part,
  messages.callIndex,
  messages.role,
  messages.content,
]
  .map(col)
  .join(", ");
const F = {
  list: [
    fileChanges.id,
    fileChanges.tenantId,
    fileChanges.sessionId,
    fileChanges.runId,
    fileChanges.toolCallId,
    fileChanges.path,
    fileChanges.existedBefore,
    fileChanges.modeBefore,
    fileChanges.modeAfter,
    fileChanges.sha256Before,
    fileChanges.sha256After,
    fileChanges.diff,
    fileChanges.notApplied,
  ]
    .map(col)
    .join(", "),
};
const openList = literals(openToolCallStatuses);

/**
 * markCallsRunning
 * Guard: every call still `queued` (the statuses leading to `running`), and the batch's fence with the run running.
 * All or none: a partial mark would report calls as "may have partly run" that never started.
 * Params: $1 call ids, $2 fence, $3 owner, $4 run, $5 session, $6 tenant, $7 events.
 * `started_at` is the clock when the call is marked, not when its transaction began: a mark that
 * waited for its tenant's call slots (SPEC X5) starts after the call whose slot it took ended.
 * Result: how many were marked, and their `tool_update` events.
 */
const markRunningStatement = statement<{ marked: number } & AppendedRow>(
  "mark_calls_running",
  `with marked as (
     update ${tbl(toolCalls)} set ${C.status} = 'running', ${C.execFence} = $2, ${C.executedBy} = $3, ${C.startedAt} = clock_timestamp()
     where ${C.id} = any($1::text[]) and ${C.status} in (${literals(toolCallStatusesLeadingTo("running"))})
       and exists (select 1 from ${tbl(runs)} where ${R.id} = $4 and ${R.fence} = $2 and ${R.status} = 'running')
       and (select count(*) from ${tbl(toolCalls)} where ${C.id} = any($1::text[]) and ${C.status} in (${literals(toolCallStatusesLeadingTo("running"))}))
           = cardinality($1::text[])
     returning ${C.id}
   ),
   ${appendEventsText({ sessionId: "$5", tenantId: "$6", payload: "$7" }, "(select count(*) from marked) > 0")}
   select (select count(*) from marked)::int as marked, ${appendedColumns}`,
);

export async function markCallsRunning(
  on: Queryable,
  held: { id: string; fence: number; tenantId: string; sessionId: string },
  calls: readonly Pick<CallRow, "id" | "callId">[],
  owner: string,
  stepRef: StepRef,
): Promise<SessionEvent[] | null> {
  const events: NewEvent[] = calls.map((call) => ({
    runId: held.id,
    step: stepRef,
    body: { type: "tool_update", callId: call.callId, status: "running" },
  }));
  const [row] = await run(on, markRunningStatement, [
    calls.map((call) => call.id),
    held.fence,
    owner,
    held.id,
    held.sessionId,
    held.tenantId,
    eventPayload(events),
  ]);
  if (!row || row.marked !== calls.length) return null;
  return appendedEvents(held.sessionId, events, row);
}

/**
 * answerCall
 * Guard: the call's status leads to the outcome's (`toolCallStatusesLeadingTo`); with `execFence`,
 * only the batch attempt that marked it running may answer it.
 * Params: $1 call, $2 status, $3 result preview, $4 is error, $5 error code, $6 statuses it may come from,
 * $7 exec fence or null, $8 message id, $9 tenant, $10 session, $11 run, $12 run ordinal, $13 step index,
 * $14 call index, $15 tool message, $16 file changes, $17 events, $18 hand off, $19 run fence,
 * $20 next job, $21 the run's current job, $22 next step index.
 * Result: whether the call was answered, whether the run was handed to its next step, and the `tool_end` event.
 *
 * One statement writes the call's terminal status, its tool message (what the model sees next),
 * its file-change records and its `tool_end` event (what clients see), SPEC L2, T3. With `handOff`,
 * when no other call of the batch is open the same statement gives the run its next step job.
 */
const answerStatement = statement<{ answered: number; handed_off: number } & AppendedRow>(
  "answer_call",
  `with answered as (
     update ${tbl(toolCalls)} set ${C.status} = $2, ${C.result} = $3::jsonb, ${C.isError} = $4, ${C.errorCode} = $5, ${C.endedAt} = now()
     where ${C.id} = $1 and ${C.status} = any($6::text[]) and ($7::int8 is null or ${C.execFence} = $7::int8)
     returning ${C.id}
   ),
   tool_message as (
     insert into ${tbl(messages)} (${M})
     select $8, $9, $10, $11, $12, $13, 2, $14, 'tool', $15::jsonb from answered
     on conflict do nothing
   ),
   recorded_changes as (
     insert into ${tbl(fileChanges)} (${F.list})
     select f.id, $9, $10, $11, $1, f.path, f."existedBefore", f."modeBefore", f."modeAfter", f."sha256Before", f."sha256After", f.diff,
       f."notApplied"
     from answered, jsonb_to_recordset($16::jsonb)
       as f(id text, path text, "existedBefore" boolean, "modeBefore" int, "modeAfter" int, "sha256Before" text, "sha256After" text, diff text,
         "notApplied" text)
   ),
   handed_off as (
     update ${tbl(runs)} set ${col(runs.stepIndex)} = $22, ${R.nextJob} = $20::jsonb, ${col(runs.redispatches)} = 0,
       ${col(runs.leaseOwner)} = null, ${col(runs.leaseUntil)} = null, ${col(runs.updatedAt)} = now()
     where $18::boolean and ${R.id} = $11 and ${R.fence} = $19 and ${R.status} = 'running' and ${R.nextJob} = $21::jsonb
       and exists (select 1 from answered)
       and not exists (
         select 1 from ${tbl(toolCalls)}
         where ${C.runId} = $11 and ${C.stepIndex} = $13 and ${C.id} <> $1 and ${C.status} in (${openList}))
     returning ${R.id}
   ),
   ${appendEventsText({ sessionId: "$10", tenantId: "$9", payload: "$17" }, "exists (select 1 from answered)")}
   select (select count(*) from answered)::int as answered, (select count(*) from handed_off)::int as handed_off,
          ${appendedColumns}`,
);

export interface AnswerRequest {
  run: { id: string; tenantId: string; sessionId: string; ordinal: number };
  call: Pick<CallRow, "id" | "stepIndex" | "callIndex" | "callId" | "name">;
  outcome: CallOutcome;
  step: StepRef | null;
  /** Only the batch attempt that ran the call may answer it. */
  execFence?: number;
  /** Hand the run to `next` if this answer closes the batch: the run's fence and the job it is on. */
  handOff?: { fence: number; current: NextJob | null; next: Extract<NextJob, { kind: "step" }> };
}

export interface Answered {
  answered: boolean;
  handedOff: boolean;
  events: SessionEvent[];
}

export async function answerCall(on: Queryable, request: AnswerRequest): Promise<Answered> {
  const { run: owner, call, outcome, handOff } = request;
  const events: NewEvent[] = [{ runId: owner.id, step: request.step, body: toolEndEvent(call, outcome) }];
  const [row] = await run(on, answerStatement, [
    call.id,
    outcome.status,
    JSON.stringify(resultPreview(outcome.content)),
    outcome.isError,
    outcome.errorCode ?? null,
    toolCallStatusesLeadingTo(outcome.status),
    request.execFence ?? null,
    newId("msg"),
    owner.tenantId,
    owner.sessionId,
    owner.id,
    owner.ordinal,
    call.stepIndex,
    call.callIndex,
    JSON.stringify(toolMessageOf(call, outcome)),
    JSON.stringify(outcome.fileChanges ?? []),
    eventPayload(events),
    handOff !== undefined,
    handOff?.fence ?? null,
    handOff ? JSON.stringify(handOff.next) : null,
    handOff ? JSON.stringify(handOff.current) : null,
    handOff?.next.stepIndex ?? null,
  ]);
  return {
    answered: (row?.answered ?? 0) > 0,
    handedOff: (row?.handed_off ?? 0) > 0,
    events: appendedEvents(owner.sessionId, events, row),
  };
}

/** The open calls of a run, locked, in model order: what a cancel or an interruption closes. */
export async function lockOpenCalls(tx: Database, runId: string): Promise<CallRow[]> {
  return tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, runId), inArray(toolCalls.status, [...openToolCallStatuses])))
    .orderBy(asc(toolCalls.stepIndex), asc(toolCalls.callIndex))
    .for("update");
}

/** The open calls of one batch, in model order. */
export async function openCallsOfBatch(
  tx: Database,
  runId: string,
  stepIndex: number,
  statuses: readonly CallRow["status"][] = openToolCallStatuses,
): Promise<CallRow[]> {
  return tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, runId), eq(toolCalls.stepIndex, stepIndex), inArray(toolCalls.status, [...statuses])))
    .orderBy(asc(toolCalls.callIndex));
}

/**
 * askApproval
 * Guard: the call is `queued` (the statuses leading to `awaiting_approval`). Result: whether it moved;
 * its approval row is written in the same transaction (X3).
 */
export async function askApproval(
  tx: Database,
  callId: string,
  approval: Omit<typeof approvals.$inferInsert, "toolCallId" | "status">,
): Promise<boolean> {
  const [moved] = await tx
    .update(toolCalls)
    .set({ status: "awaiting_approval" })
    .where(and(eq(toolCalls.id, callId), inArray(toolCalls.status, toolCallStatusesLeadingTo("awaiting_approval"))))
    .returning({ id: toolCalls.id });
  if (!moved) return false;
  await tx.insert(approvals).values({ ...approval, toolCallId: callId, status: "pending" });
  return true;
}

/**
 * approveCall
 * Guard: the call is `awaiting_approval` (a decision puts it back to `queued` for the next batch claim).
 * Result: the call, or undefined.
 */
export async function approveCall(tx: Database, callId: string): Promise<CallRow | undefined> {
  const [call] = await tx
    .update(toolCalls)
    .set({ status: "queued" })
    .where(and(eq(toolCalls.id, callId), inArray(toolCalls.status, toolCallStatusesLeadingTo("queued"))))
    .returning();
  return call;
}

/**
 * linkChildRun
 * Guard: the call is `running` under this batch's fence and has no child yet. Result: whether it linked.
 */
export async function linkChildRun(tx: Database, callId: string, execFence: number, childRunId: string): Promise<boolean> {
  const linked = await tx
    .update(toolCalls)
    .set({ childRunId })
    .where(and(eq(toolCalls.id, callId), eq(toolCalls.status, "running"), eq(toolCalls.execFence, execFence), isNull(toolCalls.childRunId)))
    .returning({ id: toolCalls.id });
  return linked.length > 0;
}

/** The running call a sub-agent run answers, if it still waits for it (A1). */
export async function callWaitingForChild(tx: Database, childRunId: string): Promise<CallRow | undefined> {
  const [call] = await tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.childRunId, childRunId), eq(toolCalls.status, "running")));
  return call;
}

/** Whether a batch's step before this one ended with tool_search activating tools (R5). */
export async function succeededCallNamed(tx: Database, runId: string, stepIndex: number, name: string): Promise<boolean> {
  const rows = await tx
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, runId), eq(toolCalls.stepIndex, stepIndex), eq(toolCalls.name, name), eq(toolCalls.status, "succeeded")))
    .limit(1);
  return rows.length > 0;
}

/**
 * appendCallProgress
 * Guard: the call is `running` under this batch attempt's fence: progress lands only while it runs.
 * Params: $1 call, $2 exec fence, $3 session, $4 tenant, $5 events. Result: the events appended (none when not owned).
 */
const progressStatement = statement<AppendedRow>(
  "append_call_progress",
  `with ${appendEventsText(
    { sessionId: "$3", tenantId: "$4", payload: "$5" },
    // The share lock waits for a cancel or an interruption answering the call, then sees it answered.
    `exists (select 1 from ${tbl(toolCalls)} where ${C.id} = $1 and ${C.status} = 'running' and ${C.execFence} = $2 for share)`,
  )}
   select ${appendedColumns}`,
);

export async function appendCallProgress(
  on: Queryable,
  owner: { id: string; fence: number; tenantId: string; sessionId: string },
  call: Pick<CallRow, "id" | "callId">,
  step: StepRef,
  progress: string,
): Promise<SessionEvent[]> {
  const events: NewEvent[] = [{ runId: owner.id, step, body: { type: "tool_update", callId: call.callId, progress } }];
  const [row] = await run(on, progressStatement, [call.id, owner.fence, owner.sessionId, owner.tenantId, eventPayload(events)]);
  return appendedEvents(owner.sessionId, events, row);
}

/** The call an approval is about, locked, if it still waits for the decision. */
export async function callAwaitingDecision(tx: Database, callId: string): Promise<CallRow | undefined> {
  const [call] = await tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.id, callId), eq(toolCalls.status, "awaiting_approval")))
    .for("update");
  return call;
}

/** The child run (and its session) a call's start committed, if it did (SPEC A1). */
export async function childOfCall(db: Database, callId: string): Promise<{ childSessionId: string; childRunId: string } | undefined> {
  const [row] = await db
    .select({ childRunId: runs.id, childSessionId: runs.sessionId })
    .from(toolCalls)
    .innerJoin(runs, eq(runs.id, toolCalls.childRunId))
    .where(eq(toolCalls.id, callId));
  return row;
}

/** Records the file changes of a call whose layer was settled after its worker died (roll-forward, SPEC X7). */
export async function insertFileChanges(
  db: Database,
  call: { tenantId: string; sessionId: string; runId: string; toolCallId: string },
  records: readonly FileChangeRecord[],
): Promise<void> {
  if (records.length === 0) return;
  await db.insert(fileChanges).values(records.map((record) => ({ ...record, id: newId("fch"), ...call })));
}
