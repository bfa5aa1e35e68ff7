import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import { toolEndEvent, toolMessageOf, type CallOutcome } from "../core/call-outcome.js";
import type { NewEvent, SessionEvent, StepRef } from "../core/events.js";
import { openToolCallStatuses, toolCallStatusesLeadingTo } from "../core/tool-call-status.js";
import type { Database } from "../db/client.js";
import { approvals, fileChanges, messages, runs, toolCalls } from "../db/schema.js";
import { type CallId, type MessageId, type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import { resultPreview } from "./result-preview.js";
import {
  appendedColumns,
  appendedEvents,
  appendEventsPerRowText,
  appendEventsText,
  eventItems,
  eventPayload,
  type AppendedRow,
} from "./events.js";
import type { CallRow } from "./run-rows.js";
import { handOffParams, handOffText, type HandOff } from "./run-transitions.js";
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
 * answerCalls
 * Guard, per row: the call's status leads to the outcome's (`toolCallStatusesLeadingTo`); with
 * `execFence`, only the batch attempt that marked it running may answer it. One row's guard
 * refuses that row alone.
 * Params: one `AnswerRow` per call, at most one per session (`statement-batches.ts` groups them so).
 * Result: per row, whether the call was answered, whether the run was handed to its next step, and its `tool_end` event.
 *
 * One statement writes each call's terminal status, its tool message (what the model sees next),
 * its file-change records and its `tool_end` event (what clients see), SPEC L2, T3. With `handOff`,
 * when no other call of the batch is open the same statement gives the run its next step job.
 * Many calls go as one statement so that results that arrive together share one round trip, one
 * plan and one commit (docs/architecture/store.md, "Statements in batches").
 */
interface AnswerRow {
  n: number;
  call_id: CallId;
  status: string;
  /** The result preview. */
  result: unknown;
  is_error: boolean;
  error_code: string | null;
  /** The statuses the call may be answered from. */
  from_statuses: readonly string[];
  /** Only the batch attempt that ran the call may answer it; null for anyone. */
  exec_fence: number | null;
  message_id: MessageId;
  tenant_id: TenantId;
  session_id: SessionId;
  run_id: RunId;
  run_ordinal: number;
  step_index: number;
  call_index: number;
  /** The tool message. */
  message: unknown;
  /** The file-change records. */
  file_changes: unknown;
  /** The `eventItems` of its `tool_end`. */
  events: unknown;
  /** Whether to hand the run to its next step if this answer closes the batch; the rest are null without. */
  hand_off: boolean;
  run_fence: number | null;
  /** The run's job now and the step job it moves to, as JSON text (`handOffParams`). */
  current_job: string | null;
  next_job: string | null;
  next_step_index: number | null;
}

const answerRowColumns = `n int, call_id text, status text, result jsonb, is_error boolean, error_code text, from_statuses text[],
  exec_fence int8, message_id text, tenant_id text, session_id text, run_id text, run_ordinal int, step_index int, call_index int,
  message jsonb, file_changes jsonb, events jsonb, hand_off boolean, run_fence int8, current_job text, next_job text, next_step_index int`;

const answerStatement = statement<{ rows: string }, { n: number; answered: boolean; handed_off: boolean } & AppendedRow>(
  "answer_calls",
  `with req as (select * from jsonb_to_recordset(:rows::jsonb) as r(${answerRowColumns})),
   answered as (
     update ${tbl(toolCalls)} set ${C.status} = r.status, ${C.result} = r.result, ${C.isError} = r.is_error, ${C.errorCode} = r.error_code,
       ${C.endedAt} = now()
     from req r
     where ${tbl(toolCalls)}.${C.id} = r.call_id and ${tbl(toolCalls)}.${C.status} = any(r.from_statuses)
       and (r.exec_fence is null or ${tbl(toolCalls)}.${C.execFence} = r.exec_fence)
     returning r.n
   ),
   answered_rows as (select r.* from req r join answered a using (n)),
   tool_message as (
     insert into ${tbl(messages)} (${M})
     select r.message_id, r.tenant_id, r.session_id, r.run_id, r.run_ordinal, r.step_index, 2, r.call_index, 'tool', r.message from answered_rows r
     on conflict do nothing
   ),
   recorded_changes as (
     insert into ${tbl(fileChanges)} (${F.list})
     select f.id, r.tenant_id, r.session_id, r.run_id, r.call_id, f.path, f."existedBefore", f."modeBefore", f."modeAfter", f."sha256Before",
       f."sha256After", f.diff, f."notApplied"
     from answered_rows r, jsonb_to_recordset(r.file_changes)
       as f(id text, path text, "existedBefore" boolean, "modeBefore" int, "modeAfter" int, "sha256Before" text, "sha256After" text, diff text,
         "notApplied" text)
   ),
   handed_off as (
     ${handOffText(
       `r.hand_off and not exists (
         select 1 from ${tbl(toolCalls)} t
         where t.${C.runId} = r.run_id and t.${C.stepIndex} = r.step_index and t.${C.id} <> r.call_id and t.${C.status} in (${openList}))`,
       {
         from: "answered_rows r",
         runId: "r.run_id",
         runFence: "r.run_fence",
         currentJob: "r.current_job::jsonb",
         nextJob: "r.next_job::jsonb",
         nextStepIndex: "r.next_step_index",
         returning: "r.n",
       },
     )}
   ),
   ${appendEventsPerRowText("answered_rows")}
   select r.n, a.n is not null as answered, h.n is not null as handed_off, b.last_seq::float8 as last_seq, now() as appended_at
   from req r left join answered a using (n) left join handed_off h using (n) left join event_seq_bump b using (n)
   order by r.n`,
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

function answerRow(request: AnswerRequest, n: number): { row: AnswerRow; events: NewEvent[] } {
  const { run: owner, call, outcome, handOff } = request;
  const events: NewEvent[] = [{ runId: owner.id, step: request.step, body: toolEndEvent(call, outcome) }];
  const hand = handOffParams(owner.id, handOff);
  return {
    events,
    row: {
      n,
      call_id: call.id,
      status: outcome.status,
      result: resultPreview(outcome.content),
      is_error: outcome.isError,
      error_code: outcome.errorCode ?? null,
      from_statuses: toolCallStatusesLeadingTo(outcome.status),
      exec_fence: request.execFence ?? null,
      message_id: newId("msg"),
      tenant_id: owner.tenantId,
      session_id: owner.sessionId,
      run_id: owner.id,
      run_ordinal: owner.ordinal,
      step_index: call.stepIndex,
      call_index: call.callIndex,
      message: toolMessageOf(call, outcome),
      file_changes: outcome.fileChanges ?? [],
      events: eventItems(events),
      hand_off: handOff !== undefined,
      run_fence: hand.runFence,
      current_job: hand.currentJob,
      next_job: hand.nextJob,
      next_step_index: hand.nextStepIndex,
    },
  };
}

/**
 * Answers calls of different sessions in one statement (none may share a session: its event
 * sequence is bumped once per statement). Each answer stands or falls with its own guard.
 */
async function answerCalls(on: Queryable, requests: readonly AnswerRequest[]): Promise<Answered[]> {
  if (new Set(requests.map((request) => request.run.sessionId)).size !== requests.length)
    throw new Error("answerCalls: at most one call per session in one statement");
  const built = requests.map(answerRow);
  const rows = await run(on, answerStatement, { rows: JSON.stringify(built.map((entry) => entry.row)) });
  return requests.map((request, index) => {
    const row = rows[index];
    if (row?.n !== index) throw new Error(`answerCalls: no result for row ${index}`);
    return {
      answered: row.answered,
      handedOff: row.handed_off,
      events: row.answered ? appendedEvents(request.run.sessionId, built[index]?.events ?? [], row) : [],
    };
  });
}

async function answerCall(on: Queryable, request: AnswerRequest): Promise<Answered> {
  const [answered] = await answerCalls(on, [request]);
  return answered as Answered;
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

/**
 * Records the file changes of a call whose layer was settled after its worker died (roll-forward,
 * SPEC X7). A record that comes with its id is stored once: its call's result may have stored it.
 */
async function insertFileChanges(
  db: Database,
  call: { tenantId: TenantId; sessionId: SessionId; runId: RunId; toolCallId: CallId },
  records: readonly FileChangeRecord[],
): Promise<void> {
  if (records.length === 0) return;
  await db
    .insert(fileChanges)
    .values(records.map((record) => ({ ...record, id: record.id ?? newId("fch"), ...call })))
    .onConflictDoNothing({ target: fileChanges.id });
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
  pg: { markCallsRunning, answerCall, answerCalls, appendCallProgress },
});
