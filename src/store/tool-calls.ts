import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import { toolEndEvent, toolMessageOf, type CallOutcome } from "../core/call-outcome.js";
import type { NewEvent, SessionEvent, StepRef } from "../core/events.js";
import { openToolCallStatuses, toolCallStatusesLeadingTo } from "../core/tool-call-status.js";
import type { Database } from "../db/client.js";
import { approvals, fileChanges, messages, runs, toolCalls } from "../db/schema.js";
import { type CallId, type MessageId, type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import { resultPreview } from "./result-preview.js";
import { appendedColumns, appendedEvents, appendEventsText, eventPayload, type AppendedRow } from "./events.js";
import type { CallRow } from "./run-rows.js";
import { handOffParams, handOffText, type HandOff, type HandOffParams } from "./run-transitions.js";
import { col, literals, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import type { FileChangeRecord } from "../core/file-change-record.js";
import { repository } from "./repository.js";

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
const R = { id: col(runs.id), fence: col(runs.fence), status: col(runs.status) };
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

/** The guard of `queued` → `running`: the statuses a call may start from. */
export const mayStartRunning = literals(toolCallStatusesLeadingTo("running"));

/** The one text of a call's start: `running` under a batch attempt's fence and lease owner, timed when it is marked. */
export function callsRunningSet(fence: string, owner: string): string {
  return `${C.status} = 'running', ${C.execFence} = ${fence}, ${C.executedBy} = ${owner}, ${C.startedAt} = clock_timestamp()`;
}

/**
 * markCallsRunning
 * Guard: every call still `queued` (the statuses leading to `running`), and the batch's fence with the run running.
 * All or none: a partial mark would report calls as "may have partly run" that never started.
 * Params: the calls, the batch's run, fence and lease owner, where the events go and the events.
 * `started_at` is the clock when the call is marked, not when its transaction began: a mark that
 * waited for its tenant's call slots (SPEC X5) starts after the call whose slot it took ended.
 * Result: how many were marked, and their `tool_update` events.
 */
const markRunningStatement = statement<
  { callIds: readonly CallId[]; runId: RunId; fence: number; owner: string; tenantId: TenantId; sessionId: SessionId; events: string },
  { marked: number } & AppendedRow
>(
  "mark_calls_running",
  `with marked as (
     update ${tbl(toolCalls)} set ${callsRunningSet(":fence", ":owner")}
     where ${C.id} = any(:callIds::text[]) and ${C.status} in (${mayStartRunning})
       and exists (select 1 from ${tbl(runs)} where ${R.id} = :runId and ${R.fence} = :fence and ${R.status} = 'running')
       and (select count(*) from ${tbl(toolCalls)} where ${C.id} = any(:callIds::text[]) and ${C.status} in (${mayStartRunning}))
           = cardinality(:callIds::text[])
     returning ${C.id}
   ),
   ${appendEventsText({ sessionId: ":sessionId", tenantId: ":tenantId", payload: ":events" }, "(select count(*) from marked) > 0")}
   select (select count(*) from marked)::int as marked, ${appendedColumns}`,
);

async function markCallsRunning(
  on: Queryable,
  held: { id: RunId; fence: number; tenantId: TenantId; sessionId: SessionId },
  calls: readonly Pick<CallRow, "id" | "callId">[],
  owner: string,
  stepRef: StepRef,
): Promise<SessionEvent[] | null> {
  const events: NewEvent[] = calls.map((call) => ({
    runId: held.id,
    step: stepRef,
    body: { type: "tool_update", callId: call.callId, status: "running" },
  }));
  const [row] = await run(on, markRunningStatement, {
    callIds: calls.map((call) => call.id),
    runId: held.id,
    fence: held.fence,
    owner,
    tenantId: held.tenantId,
    sessionId: held.sessionId,
    events: eventPayload(events),
  });
  if (!row || row.marked !== calls.length) return null;
  return appendedEvents(held.sessionId, events, row);
}

/**
 * answerCall
 * Guard: the call's status leads to the outcome's (`toolCallStatusesLeadingTo`); with `execFence`,
 * only the batch attempt that marked it running may answer it.
 * Params: `AnswerParams`.
 * Result: whether the call was answered, whether the run was handed to its next step, and the `tool_end` event.
 *
 * One statement writes the call's terminal status, its tool message (what the model sees next),
 * its file-change records and its `tool_end` event (what clients see), SPEC L2, T3. With `handOff`,
 * when no other call of the batch is open the same statement gives the run its next step job.
 */
interface AnswerParams extends HandOffParams {
  /** The call's row id. */
  callId: CallId;
  status: string;
  /** The result preview (JSON). */
  result: string;
  isError: boolean;
  errorCode: string | null;
  /** The statuses the call may be answered from. */
  fromStatuses: readonly string[];
  /** Only the batch attempt that ran the call may answer it; null for anyone. */
  execFence: number | null;
  messageId: MessageId;
  tenantId: TenantId;
  sessionId: SessionId;
  runOrdinal: number;
  stepIndex: number;
  callIndex: number;
  /** The tool message (JSON). */
  message: string;
  /** The file-change records (JSON). */
  fileChanges: string;
  events: string;
  /** Whether to hand the run to its next step if this answer closes the batch (`HandOffParams`, null without). */
  handOff: boolean;
}

const answerStatement = statement<AnswerParams, { answered: number; handed_off: number } & AppendedRow>(
  "answer_call",
  `with answered as (
     update ${tbl(toolCalls)} set ${C.status} = :status, ${C.result} = :result::jsonb, ${C.isError} = :isError, ${C.errorCode} = :errorCode,
       ${C.endedAt} = now()
     where ${C.id} = :callId and ${C.status} = any(:fromStatuses::text[]) and (:execFence::int8 is null or ${C.execFence} = :execFence::int8)
     returning ${C.id}
   ),
   tool_message as (
     insert into ${tbl(messages)} (${M})
     select :messageId, :tenantId, :sessionId, :runId, :runOrdinal, :stepIndex, 2, :callIndex, 'tool', :message::jsonb from answered
     on conflict do nothing
   ),
   recorded_changes as (
     insert into ${tbl(fileChanges)} (${F.list})
     select f.id, :tenantId, :sessionId, :runId, :callId, f.path, f."existedBefore", f."modeBefore", f."modeAfter", f."sha256Before", f."sha256After", f.diff,
       f."notApplied"
     from answered, jsonb_to_recordset(:fileChanges::jsonb)
       as f(id text, path text, "existedBefore" boolean, "modeBefore" int, "modeAfter" int, "sha256Before" text, "sha256After" text, diff text,
         "notApplied" text)
   ),
   handed_off as (
     ${handOffText(`:handOff::boolean and exists (select 1 from answered)
       and not exists (
         select 1 from ${tbl(toolCalls)}
         where ${C.runId} = :runId and ${C.stepIndex} = :stepIndex and ${C.id} <> :callId and ${C.status} in (${openList}))`)}
   ),
   ${appendEventsText({ sessionId: ":sessionId", tenantId: ":tenantId", payload: ":events" }, "exists (select 1 from answered)")}
   select (select count(*) from answered)::int as answered, (select count(*) from handed_off)::int as handed_off,
          ${appendedColumns}`,
);

export interface AnswerRequest {
  run: { id: RunId; tenantId: TenantId; sessionId: SessionId; ordinal: number };
  call: Pick<CallRow, "id" | "stepIndex" | "callIndex" | "callId" | "name">;
  outcome: CallOutcome;
  step: StepRef | null;
  /** Only the batch attempt that ran the call may answer it. */
  execFence?: number;
  /** Hand the run to `next` if this answer closes the batch: the run's fence and the job it is on. */
  handOff?: HandOff;
}

export interface Answered {
  answered: boolean;
  handedOff: boolean;
  events: SessionEvent[];
}

async function answerCall(on: Queryable, request: AnswerRequest): Promise<Answered> {
  const { run: owner, call, outcome, handOff } = request;
  const events: NewEvent[] = [{ runId: owner.id, step: request.step, body: toolEndEvent(call, outcome) }];
  const [row] = await run(on, answerStatement, {
    callId: call.id,
    status: outcome.status,
    result: JSON.stringify(resultPreview(outcome.content)),
    isError: outcome.isError,
    errorCode: outcome.errorCode ?? null,
    fromStatuses: toolCallStatusesLeadingTo(outcome.status),
    execFence: request.execFence ?? null,
    messageId: newId("msg"),
    tenantId: owner.tenantId,
    sessionId: owner.sessionId,
    runOrdinal: owner.ordinal,
    stepIndex: call.stepIndex,
    callIndex: call.callIndex,
    message: JSON.stringify(toolMessageOf(call, outcome)),
    fileChanges: JSON.stringify(outcome.fileChanges ?? []),
    events: eventPayload(events),
    handOff: handOff !== undefined,
    ...handOffParams(owner.id, handOff),
  });
  return {
    answered: (row?.answered ?? 0) > 0,
    handedOff: (row?.handed_off ?? 0) > 0,
    events: appendedEvents(owner.sessionId, events, row),
  };
}

/** The open calls of a run, locked, in model order: what a cancel or an interruption closes. */
async function lockOpenCalls(tx: Database, runId: RunId): Promise<CallRow[]> {
  return tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, runId), inArray(toolCalls.status, [...openToolCallStatuses])))
    .orderBy(asc(toolCalls.stepIndex), asc(toolCalls.callIndex))
    .for("update");
}

/** The open calls of one batch, in model order. */
async function openCallsOfBatch(
  tx: Database,
  runId: RunId,
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
async function askApproval(
  tx: Database,
  callId: CallId,
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
async function approveCall(tx: Database, callId: CallId): Promise<CallRow | undefined> {
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
async function linkChildRun(tx: Database, callId: CallId, execFence: number, childRunId: RunId): Promise<boolean> {
  const linked = await tx
    .update(toolCalls)
    .set({ childRunId })
    .where(and(eq(toolCalls.id, callId), eq(toolCalls.status, "running"), eq(toolCalls.execFence, execFence), isNull(toolCalls.childRunId)))
    .returning({ id: toolCalls.id });
  return linked.length > 0;
}

/** The running call a sub-agent run answers, if it still waits for it (A1). */
async function callWaitingForChild(tx: Database, childRunId: RunId): Promise<CallRow | undefined> {
  const [call] = await tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.childRunId, childRunId), eq(toolCalls.status, "running")));
  return call;
}

/** Whether a batch's step before this one ended with tool_search activating tools (R5). */
async function succeededCallNamed(tx: Database, runId: RunId, stepIndex: number, name: string): Promise<boolean> {
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
 * Params: the call, the batch attempt's fence, where the events go and the events. Result: the events appended (none when not owned).
 */
const progressStatement = statement<
  { callId: CallId; execFence: number; tenantId: TenantId; sessionId: SessionId; events: string },
  AppendedRow
>(
  "append_call_progress",
  `with ${appendEventsText(
    { sessionId: ":sessionId", tenantId: ":tenantId", payload: ":events" },
    // The share lock waits for a cancel or an interruption answering the call, then sees it answered.
    `exists (select 1 from ${tbl(toolCalls)} where ${C.id} = :callId and ${C.status} = 'running' and ${C.execFence} = :execFence for share)`,
  )}
   select ${appendedColumns}`,
);

async function appendCallProgress(
  on: Queryable,
  owner: { id: RunId; fence: number; tenantId: TenantId; sessionId: SessionId },
  call: Pick<CallRow, "id" | "callId">,
  step: StepRef,
  progress: string,
): Promise<SessionEvent[]> {
  const events: NewEvent[] = [{ runId: owner.id, step, body: { type: "tool_update", callId: call.callId, progress } }];
  const [row] = await run(on, progressStatement, {
    callId: call.id,
    execFence: owner.fence,
    tenantId: owner.tenantId,
    sessionId: owner.sessionId,
    events: eventPayload(events),
  });
  return appendedEvents(owner.sessionId, events, row);
}

/** The call an approval is about, locked, if it still waits for the decision. */
async function callAwaitingDecision(tx: Database, callId: CallId): Promise<CallRow | undefined> {
  const [call] = await tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.id, callId), eq(toolCalls.status, "awaiting_approval")))
    .for("update");
  return call;
}

/** The child run (and its session) a call's start committed, if it did (SPEC A1). */
async function childOfCall(db: Database, callId: CallId): Promise<{ childSessionId: SessionId; childRunId: RunId } | undefined> {
  const [row] = await db
    .select({ childRunId: runs.id, childSessionId: runs.sessionId })
    .from(toolCalls)
    .innerJoin(runs, eq(runs.id, toolCalls.childRunId))
    .where(eq(toolCalls.id, callId));
  return row;
}

/** Records the file changes of a call whose layer was settled after its worker died (roll-forward, SPEC X7). */
async function insertFileChanges(
  db: Database,
  call: { tenantId: TenantId; sessionId: SessionId; runId: RunId; toolCallId: CallId },
  records: readonly FileChangeRecord[],
): Promise<void> {
  if (records.length === 0) return;
  await db.insert(fileChanges).values(records.map((record) => ({ ...record, id: newId("fch"), ...call })));
}

/** `store.toolCalls`. */
export const toolCallsRepository = repository({
  db: {
    lockOpenCalls,
    openCallsOfBatch,
    askApproval,
    approveCall,
    linkChildRun,
    callWaitingForChild,
    succeededCallNamed,
    callAwaitingDecision,
    childOfCall,
    insertFileChanges,
  },
  pg: { markCallsRunning, answerCall, appendCallProgress },
});
