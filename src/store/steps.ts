import { and, asc, eq, sql } from "drizzle-orm";
import type { EventBody, NewEvent, SessionEvent, StepRef } from "../core/events.js";
import type { AssistantToolCall, ReasoningBlock } from "../core/history.js";
import type { Database } from "../db/client.js";
import { events, messages, projectPlacements, runs, sessions, steps, toolCalls } from "../db/schema.js";
import { type MessageId, type RunId, type SessionId, type StepId, type TenantId, newId } from "../ids.js";
import type { FinishReason, Usage } from "../providers/provider.js";
import {
  appendedColumns,
  appendedEvents,
  appendEventsPerRowText,
  appendEventsText,
  eventItems,
  eventPayload,
  type AppendedRow,
} from "./events.js";
import { clientOf, col, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import type { ClaimedRun } from "./run-rows.js";
import { repository } from "./repository.js";

/** Model Steps (SPEC D1): one row per step index, its attempt counted up by each claim. */

const R = { id: col(runs.id), fence: col(runs.fence), status: col(runs.status) };
const S = {
  id: col(steps.id),
  tenantId: col(steps.tenantId),
  runId: col(steps.runId),
  index: col(steps.index),
  attempt: col(steps.attempt),
  status: col(steps.status),
  tools: col(steps.tools),
  finishReason: col(steps.finishReason),
  stopReason: col(steps.stopReason),
  usage: col(steps.usage),
  endedAt: col(steps.endedAt),
};
const M = {
  id: col(messages.id),
  tenantId: col(messages.tenantId),
  sessionId: col(messages.sessionId),
  runId: col(messages.runId),
  runOrdinal: col(messages.runOrdinal),
  stepIndex: col(messages.stepIndex),
  part: col(messages.part),
  callIndex: col(messages.callIndex),
  role: col(messages.role),
  content: col(messages.content),
};
const C = {
  id: col(toolCalls.id),
  tenantId: col(toolCalls.tenantId),
  sessionId: col(toolCalls.sessionId),
  runId: col(toolCalls.runId),
  stepId: col(toolCalls.stepId),
  stepIndex: col(toolCalls.stepIndex),
  callIndex: col(toolCalls.callIndex),
  callId: col(toolCalls.callId),
  name: col(toolCalls.name),
  argumentsRaw: col(toolCalls.argumentsRaw),
  status: col(toolCalls.status),
  preGrant: col(toolCalls.preGrant),
};

/**
 * The run a job holds, as the start guards it. The share lock makes the start wait for a
 * transaction that is ending or cancelling the run and then see its new fence, so no start
 * is appended after the run's end.
 */
const heldRun = `exists (select 1 from ${tbl(runs)} where ${R.id} = :runId and ${R.fence} = :fence and ${R.status} = 'running' for share)`;

/** The parameters `heldRun` names, and where the events of its statement go. */
interface HeldRunParams {
  runId: RunId;
  fence: number;
  tenantId: TenantId;
  sessionId: SessionId;
  /** `eventPayload` JSON. */
  events: string;
}

/**
 * startStep
 * Guard: the step job's fence, run running. Params: `HeldRunParams` (events: `step_start` first, then
 * what streamed), and the step: a new row's id, its index, attempt and tools (JSON).
 * Result: the step's id (a new row, or the earlier attempt's row now `streaming` again) and the events.
 * A step whose model answers before its first flush never runs this: `commitStep` writes its start.
 */
const startStepStatement = statement<
  HeldRunParams & { stepId: StepId; stepIndex: number; attempt: number; tools: string },
  { id: StepId | null } & AppendedRow
>(
  "start_step",
  `with started as (
     insert into ${tbl(steps)} (${S.id}, ${S.tenantId}, ${S.runId}, ${S.index}, ${S.attempt}, ${S.status}, ${S.tools})
     select :stepId, :tenantId, :runId, :stepIndex, :attempt, 'streaming', :tools::jsonb where ${heldRun}
     on conflict (${S.runId}, ${S.index}) do update set ${S.attempt} = excluded.${S.attempt}, ${S.status} = 'streaming', ${S.tools} = excluded.${S.tools}
     returning ${S.id} as id
   ),
   ${appendEventsText({ sessionId: ":sessionId", tenantId: ":tenantId", payload: ":events" }, "exists (select 1 from started)")}
   select (select id from started) as id, ${appendedColumns}`,
);

/**
 * appendStepEvents
 * Guard: the step job's fence, run running, under the same share lock as the start. Params:
 * `HeldRunParams`. Result: the events appended, none when the run moved on.
 * What a streaming step writes after its start (text and argument deltas, `tool_begin`).
 */
const appendStepEventsStatement = statement<HeldRunParams, AppendedRow>(
  "append_step_events",
  `with ${appendEventsText({ sessionId: ":sessionId", tenantId: ":tenantId", payload: ":events" }, heldRun)} select ${appendedColumns}`,
);

async function appendStepEvents(
  on: Queryable,
  held: ClaimedRun,
  ref: StepRef,
  bodies: readonly EventBody[],
): Promise<SessionEvent[] | null> {
  const events: NewEvent[] = bodies.map((body) => ({ runId: held.id, step: ref, body }));
  const [row] = await run(on, appendStepEventsStatement, heldRunParams(held, events));
  return row?.last_seq === null || !row ? null : appendedEvents(held.sessionId, events, row);
}

function heldRunParams(held: ClaimedRun, events: readonly NewEvent[]): HeldRunParams {
  return { runId: held.id, fence: held.fence, tenantId: held.tenantId, sessionId: held.sessionId, events: eventPayload(events) };
}

/** A model Step attempt as its job knows it before anything of it is written. */
export interface StepAttempt {
  index: number;
  attempt: number;
  /** The tools the step offers: its snapshot for the batch (`steps.tools`). */
  tools: string[];
}

/** Answers the events appended, or null when the fence was lost. */
async function startStep(on: Queryable, held: ClaimedRun, step: StepAttempt, bodies: readonly EventBody[]): Promise<SessionEvent[] | null> {
  const ref: StepRef = { index: step.index, attempt: step.attempt };
  const events: NewEvent[] = bodies.map((body) => ({ runId: held.id, step: ref, body }));
  const [row] = await run(on, startStepStatement, {
    ...heldRunParams(held, events),
    stepId: newId("stp"),
    stepIndex: step.index,
    attempt: step.attempt,
    tools: JSON.stringify(step.tools),
  });
  if (!row?.id) return null;
  return appendedEvents(held.sessionId, events, row);
}

export interface StepResult {
  text: string;
  toolCalls: AssistantToolCall[];
  /** The response's reasoning blocks as the provider sent them (PR5), stored with the message when there are some. */
  reasoning?: ReasoningBlock[];
  /** `stopReason` is the provider's raw value, stored beside the normalized reason. */
  finish: { reason: FinishReason; stopReason?: string; usage?: Usage } | undefined;
  /** Live events the step's sink had not written yet; they go before `step_end`. */
  pendingEvents: EventBody[];
  /** Grants of the calls (by call index) the batch's claim starts at once: its first group, allowed by the gateway. */
  preGrants?: ReadonlyMap<number, { network: boolean }>;
  /** The provider profile and model that answered (a fallback's, PR3), named on `step_end`. */
  answeredBy?: { profile: string; model: string };
}

/**
 * The one text of a step attempt's end: the step's row (written here if its start was never
 * flushed) gets the attempt, its end `status` and finish. `source` names where the values come
 * from: `EndStepParams` (`params`) or the rows of a many-row statement (`r`, `CommitRow` columns)
 * after `from`, the row source that guards them (a fenced update having matched).
 */
function endStepText(status: string, source: { kind: "params" } | { kind: "rows"; from: string }): string {
  const v =
    source.kind === "params"
      ? `:stepId, :tenantId, :runId, :stepIndex, :attempt, ${status}, :tools::jsonb, :finishReason, :stopReason, :usage::jsonb, now()`
      : `r.step_id, r.tenant_id, r.run_id, r.step_index, r.attempt, ${status}, r.tools, r.finish_reason, r.stop_reason, r.usage, now() from ${source.from}`;
  return `
     insert into ${tbl(steps)} (${S.id}, ${S.tenantId}, ${S.runId}, ${S.index}, ${S.attempt}, ${S.status}, ${S.tools}, ${S.finishReason}, ${S.stopReason}, ${S.usage}, ${S.endedAt})
     select ${v}
     on conflict (${S.runId}, ${S.index}) do update set ${S.attempt} = excluded.${S.attempt}, ${S.status} = excluded.${S.status}, ${S.tools} = excluded.${S.tools},
       ${S.finishReason} = excluded.${S.finishReason}, ${S.stopReason} = excluded.${S.stopReason}, ${S.usage} = excluded.${S.usage}, ${S.endedAt} = now()
     returning ${S.id} as id, ${S.runId} as run_id`;
}

interface EndStepParams {
  runId: RunId;
  tenantId: TenantId;
  /** The id of the step's row if its start was never flushed. */
  stepId: StepId;
  stepIndex: number;
  attempt: number;
  /** JSON. */
  tools: string;
  finishReason: string | null;
  stopReason: string | null;
  /** JSON or null. */
  usage: string | null;
}

/**
 * commitSteps
 * Guard, per row: the step job's fence, run running and still on this step's job (a commit sent
 * again after its answer was lost finds the run moved on and writes nothing twice). Params: `CommitRow` per step, of different
 * sessions (a session's event counter is bumped once per statement).
 * Result per row: whether it committed, the session's last sequence number after its events, and
 * where its project was placed. Each committed row: the step row (written here if its start was
 * never flushed) ended, the assistant message, its calls as `queued` on that row, the run's next job
 * (the batch, or none) and the lease released. A stale row is refused alone (docs/architecture/store.md).
 */
interface CommitRow {
  n: number;
  run_id: RunId;
  fence: number;
  tenant_id: TenantId;
  session_id: SessionId;
  /** The run's next job: the step's batch, or null when it asked for no tool. */
  next_job: unknown;
  /** The id of the step's row if its start was never flushed. */
  step_id: StepId;
  step_index: number;
  attempt: number;
  tools: readonly string[];
  finish_reason: string;
  stop_reason: string | null;
  usage: Usage | null;
  message_id: MessageId;
  run_ordinal: number;
  /** The assistant message. */
  message: unknown;
  /** The calls: id, call_index, call_id, name, arguments_raw, pre_grant. */
  calls: unknown;
  /** The `eventItems` of its leftovers and `step_end`. */
  events: unknown;
}

const commitRowColumns = `n int, run_id text, fence int8, tenant_id text, session_id text, next_job jsonb, step_id text, step_index int,
  attempt int, tools jsonb, finish_reason text, stop_reason text, usage jsonb, message_id text, run_ordinal int, message jsonb,
  calls jsonb, events jsonb`;

const commitStepsStatement = statement<
  { rows: string },
  { n: number; committed: boolean; placement_host: string | null; placement_epoch: number | null } & AppendedRow
>(
  "commit_steps",
  `with req as (select * from jsonb_to_recordset(:rows::jsonb) as r(${commitRowColumns})),
   committed_run as (
     update ${tbl(runs)} set ${col(runs.nextJob)} = r.next_job, ${col(runs.redispatches)} = 0, ${col(runs.leaseOwner)} = null,
       ${col(runs.leaseUntil)} = null, ${col(runs.updatedAt)} = now()
     from req r
     where ${tbl(runs)}.${R.id} = r.run_id and ${tbl(runs)}.${R.fence} = r.fence and ${tbl(runs)}.${R.status} = 'running'
       and ${tbl(runs)}.${col(runs.nextJob)} ->> 'kind' = 'step' and (${tbl(runs)}.${col(runs.nextJob)} ->> 'stepIndex')::int = r.step_index
     returning r.n
   ),
   committed_rows as (select r.* from req r join committed_run c using (n)),
   ended_step as (${endStepText("'completed'", { kind: "rows", from: "committed_rows r" })}),
   assistant_message as (
     insert into ${tbl(messages)} (${M.id}, ${M.tenantId}, ${M.sessionId}, ${M.runId}, ${M.runOrdinal}, ${M.stepIndex}, ${M.part}, ${M.callIndex}, ${M.role}, ${M.content})
     select r.message_id, r.tenant_id, r.session_id, r.run_id, r.run_ordinal, r.step_index, 1, 0, 'assistant', r.message from committed_rows r
     on conflict do nothing
   ),
   new_calls as (
     insert into ${tbl(toolCalls)} (${C.id}, ${C.tenantId}, ${C.sessionId}, ${C.runId}, ${C.stepId}, ${C.stepIndex}, ${C.callIndex}, ${C.callId}, ${C.name}, ${C.argumentsRaw}, ${C.status}, ${C.preGrant})
     select c.id, r.tenant_id, r.session_id, r.run_id, e.id, r.step_index, c.call_index, c.call_id, c.name, c.arguments_raw, 'queued', c.pre_grant
     from committed_rows r join ended_step e on e.run_id = r.run_id,
       jsonb_to_recordset(r.calls) as c(id text, call_index int, call_id text, name text, arguments_raw text, pre_grant jsonb)
     on conflict do nothing
   ),
   ${appendEventsPerRowText("committed_rows")},
   placement as (
     select r.n, pp.${col(projectPlacements.hostId)} as host_id, pp.${col(projectPlacements.epoch)}::float8 as epoch
     from committed_rows r join ${tbl(sessions)} se on se.${col(sessions.id)} = r.session_id
       join ${tbl(projectPlacements)} pp on pp.${col(projectPlacements.projectId)} = se.${col(sessions.projectId)}
     where r.next_job is not null
   )
   select r.n, c.n is not null as committed, b.last_seq::float8 as last_seq, now() as appended_at,
     p.host_id as placement_host, p.epoch as placement_epoch
   from req r left join committed_run c using (n) left join event_seq_bump b using (n) left join placement p using (n)
   order by r.n`,
);

/** A committed step: its events, and where its project was placed at the commit (none: not placed, or released). */
export interface CommittedStep {
  events: SessionEvent[];
  /** Read with the commit so that dispatching the batch needs no statement of its own (SPEC W3: the batch's claim checks it). */
  placement: { hostId: string; epoch: number } | null;
}

/** A step attempt's commit, as its job asks for it. */
export interface CommitRequest {
  held: ClaimedRun;
  step: StepAttempt;
  result: StepResult;
}

function commitRow(request: CommitRequest, n: number): { row: CommitRow; events: NewEvent[] } {
  const { held, step, result } = request;
  const stepRef: StepRef = { index: step.index, attempt: step.attempt };
  const finishReason = result.finish?.reason ?? "other";
  const stopReason = result.finish?.stopReason ?? null;
  const usage = result.finish?.usage;
  const stepEnd: NewEvent = {
    runId: held.id,
    step: stepRef,
    body: {
      type: "step_end",
      stepIndex: step.index,
      attempt: step.attempt,
      finishReason,
      ...(stopReason !== null ? { stopReason } : {}),
      ...(usage ? { usage } : {}),
      toolCalls: result.toolCalls.length,
      ...(result.answeredBy ? { profile: result.answeredBy.profile, model: result.answeredBy.model } : {}),
    },
  };
  const events: NewEvent[] = [...result.pendingEvents.map((body) => ({ runId: held.id, step: stepRef, body })), stepEnd];
  return {
    events,
    row: {
      n,
      run_id: held.id,
      fence: held.fence,
      tenant_id: held.tenantId,
      session_id: held.sessionId,
      next_job: result.toolCalls.length > 0 ? { kind: "batch", stepIndex: step.index } : null,
      step_id: newId("stp"),
      step_index: step.index,
      attempt: step.attempt,
      tools: step.tools,
      finish_reason: finishReason,
      stop_reason: stopReason,
      usage: usage ?? null,
      message_id: newId("msg"),
      run_ordinal: held.ordinal,
      message: {
        role: "assistant",
        text: result.text,
        toolCalls: result.toolCalls,
        ...(result.reasoning?.length ? { reasoning: result.reasoning } : {}),
      },
      calls: result.toolCalls.map((call, callIndex) => ({
        id: newId("call"),
        call_index: callIndex,
        call_id: call.callId,
        name: call.name,
        arguments_raw: call.argumentsRaw,
        pre_grant: result.preGrants?.get(callIndex) ?? null,
      })),
      events: eventItems(events),
    },
  };
}

/** Commits steps of different sessions in one statement; each answers its events, or null when its fence was lost. */
async function commitSteps(on: Queryable, requests: readonly CommitRequest[]): Promise<(CommittedStep | null)[]> {
  if (new Set(requests.map((request) => request.held.sessionId)).size !== requests.length)
    throw new Error("commitSteps: at most one step per session in one statement");
  const built = requests.map(commitRow);
  const rows = await run(on, commitStepsStatement, { rows: JSON.stringify(built.map((entry) => entry.row)) });
  return requests.map((request, index) => {
    const row = rows[index];
    if (row?.n !== index) throw new Error(`commitSteps: no result for row ${index}`);
    if (!row.committed) return null;
    const placement =
      row.placement_host !== null && row.placement_epoch !== null ? { hostId: row.placement_host, epoch: row.placement_epoch } : null;
    return { events: appendedEvents(request.held.sessionId, built[index]?.events ?? [], row), placement };
  });
}

/** Answers the events appended, or null when the fence was lost. With no tool calls the caller ends the run in the same transaction. */
async function commitStep(on: Queryable, held: ClaimedRun, step: StepAttempt, result: StepResult): Promise<CommittedStep | null> {
  const [committed] = await commitSteps(on, [{ held, step, result }]);
  return committed ?? null;
}

/**
 * endStepAttempt
 * Guard: the caller's transaction holds the run (fenced). Result: none. Records an attempt that
 * commits no answer: its last attempt failed (`failed`), or it is asked again (`completed`,
 * `empty_asked_again`), so the next claim counts one attempt more.
 */
const endStepAttemptStatement = statement<EndStepParams & { status: "failed" | "completed" }, { id: StepId }>(
  "end_step_attempt",
  endStepText(":status", { kind: "params" }),
);

async function endStepAttempt(
  tx: Database,
  held: ClaimedRun,
  step: StepAttempt,
  ending: { status: "failed" } | { status: "completed"; finishReason: string },
): Promise<void> {
  await run(clientOf(tx), endStepAttemptStatement, {
    runId: held.id,
    tenantId: held.tenantId,
    stepId: newId("stp"),
    stepIndex: step.index,
    attempt: step.attempt,
    tools: JSON.stringify(step.tools),
    status: ending.status,
    finishReason: ending.status === "completed" ? ending.finishReason : null,
    stopReason: null,
    usage: null,
  });
}

/**
 * closeStreamingStep
 * Guard: the step is still `streaming` (locked). Result: the text its attempt streamed so far, or
 * undefined when no step of the run was streaming. The step ends as `completed` with reason `cancelled`.
 */
async function closeStreamingStep(
  tx: Database,
  cut: { id: RunId; sessionId: SessionId; stepIndex: number },
): Promise<{ index: number; text: string } | undefined> {
  const [step] = await tx
    .select()
    .from(steps)
    .where(and(eq(steps.runId, cut.id), eq(steps.index, cut.stepIndex), eq(steps.status, "streaming")))
    .for("update");
  if (!step) return undefined;
  const deltas = await tx
    .select({ text: sql<string>`${events.data}->>'text'` })
    .from(events)
    .where(
      and(
        eq(events.sessionId, cut.sessionId),
        eq(events.runId, cut.id),
        eq(events.stepIndex, step.index),
        eq(events.attempt, step.attempt),
        eq(events.type, "text_delta"),
      ),
    )
    .orderBy(asc(events.seq));
  await tx.update(steps).set({ status: "completed", finishReason: "cancelled", endedAt: sql`now()` }).where(eq(steps.id, step.id));
  return { index: step.index, text: deltas.map((d) => d.text).join("") };
}

/** `store.steps`. */
export const stepsRepository = repository({
  db: { endStepAttempt, closeStreamingStep },
  pg: { appendStepEvents, startStep, commitStep, commitSteps },
});
