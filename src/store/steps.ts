import { and, asc, eq, sql } from "drizzle-orm";
import type { EventBody, NewEvent, SessionEvent, StepRef } from "../core/events.js";
import type { AssistantToolCall, ReasoningBlock } from "../core/history.js";
import type { Database } from "../db/client.js";
import { events, messages, projectPlacements, runs, sessions, steps, toolCalls } from "../db/schema.js";
import { type MessageId, type RunId, type SessionId, type StepId, type TenantId, newId } from "../ids.js";
import type { FinishReason, Usage } from "../providers/provider.js";
import { appendedColumns, appendedEvents, appendEventsText, eventPayload, type AppendedRow } from "./events.js";
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
 * flushed) gets the attempt, its end `status` and finish. Params: `EndStepParams`; `from` is the
 * row source that guards it (a fenced update having matched), empty for none.
 */
function endStepText(status: string, from: string): string {
  return `
     insert into ${tbl(steps)} (${S.id}, ${S.tenantId}, ${S.runId}, ${S.index}, ${S.attempt}, ${S.status}, ${S.tools}, ${S.finishReason}, ${S.stopReason}, ${S.usage}, ${S.endedAt})
     select :stepId, :tenantId, :runId, :stepIndex, :attempt, ${status}, :tools::jsonb, :finishReason, :stopReason, :usage::jsonb, now() ${from}
     on conflict (${S.runId}, ${S.index}) do update set ${S.attempt} = excluded.${S.attempt}, ${S.status} = excluded.${S.status}, ${S.tools} = excluded.${S.tools},
       ${S.finishReason} = excluded.${S.finishReason}, ${S.stopReason} = excluded.${S.stopReason}, ${S.usage} = excluded.${S.usage}, ${S.endedAt} = now()
     returning ${S.id} as id`;
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
 * commitStep
 * Guard: the step job's fence, run running. Params: `CommitStepParams`.
 * Result: whether it committed, and the events appended: the step row (written here if its start
 * was never flushed) ended, the assistant message, its calls as `queued` on that row, the run's
 * next job (the batch, or none) and the lease released.
 */
interface CommitStepParams extends HeldRunParams, EndStepParams {
  /** The run's next job (JSON): the step's batch, or null when it asked for no tool. */
  nextJob: string | null;
  messageId: MessageId;
  runOrdinal: number;
  /** The assistant message (JSON). */
  message: string;
  /** The calls (JSON): id, call_index, call_id, name, arguments_raw, pre_grant. */
  calls: string;
}

const commitStepStatement = statement<
  CommitStepParams,
  { committed: number; placement_host: string | null; placement_epoch: number | null } & AppendedRow
>(
  "commit_step",
  `with committed_run as (
     update ${tbl(runs)} set ${col(runs.nextJob)} = :nextJob::jsonb, ${col(runs.redispatches)} = 0, ${col(runs.leaseOwner)} = null,
       ${col(runs.leaseUntil)} = null, ${col(runs.updatedAt)} = now()
     where ${R.id} = :runId and ${R.fence} = :fence and ${R.status} = 'running'
     returning ${R.id}
   ),
   ended_step as (${endStepText("'completed'", "from committed_run")}),
   assistant_message as (
     insert into ${tbl(messages)} (${M.id}, ${M.tenantId}, ${M.sessionId}, ${M.runId}, ${M.runOrdinal}, ${M.stepIndex}, ${M.part}, ${M.callIndex}, ${M.role}, ${M.content})
     select :messageId, :tenantId, :sessionId, :runId, :runOrdinal, :stepIndex, 1, 0, 'assistant', :message::jsonb from committed_run
     on conflict do nothing
   ),
   new_calls as (
     insert into ${tbl(toolCalls)} (${C.id}, ${C.tenantId}, ${C.sessionId}, ${C.runId}, ${C.stepId}, ${C.stepIndex}, ${C.callIndex}, ${C.callId}, ${C.name}, ${C.argumentsRaw}, ${C.status}, ${C.preGrant})
     select c.id, :tenantId, :sessionId, :runId, e.id, :stepIndex, c.call_index, c.call_id, c.name, c.arguments_raw, 'queued', c.pre_grant
     from ended_step e, jsonb_to_recordset(:calls::jsonb) as c(id text, call_index int, call_id text, name text, arguments_raw text, pre_grant jsonb)
     on conflict do nothing
   ),
   ${appendEventsText({ sessionId: ":sessionId", tenantId: ":tenantId", payload: ":events" }, "exists (select 1 from committed_run)")},
   placement as (
     select pp.${col(projectPlacements.hostId)} as host_id, pp.${col(projectPlacements.epoch)}::float8 as epoch from ${tbl(projectPlacements)} pp
     where pp.${col(projectPlacements.projectId)} = (select se.${col(sessions.projectId)} from ${tbl(sessions)} se where se.${col(sessions.id)} = :sessionId)
       and :nextJob::jsonb is not null
   )
   select (select count(*) from committed_run)::int as committed, ${appendedColumns},
     (select host_id from placement) as placement_host, (select epoch from placement) as placement_epoch`,
);

/** A committed step: its events, and where its project was placed at the commit (none: not placed, or released). */
export interface CommittedStep {
  events: SessionEvent[];
  /** Read with the commit so that dispatching the batch needs no statement of its own (SPEC W3: the batch's claim checks it). */
  placement: { hostId: string; epoch: number } | null;
}

/** Answers the events appended, or null when the fence was lost. With no tool calls the caller ends the run in the same transaction. */
async function commitStep(on: Queryable, held: ClaimedRun, step: StepAttempt, result: StepResult): Promise<CommittedStep | null> {
  const stepRef: StepRef = { index: step.index, attempt: step.attempt };
  const finishReason = result.finish?.reason ?? "other";
  const stopReason = result.finish?.stopReason ?? null;
  const usage = result.finish?.usage;
  const next = result.toolCalls.length > 0 ? JSON.stringify({ kind: "batch", stepIndex: step.index }) : null;
  const calls = JSON.stringify(
    result.toolCalls.map((call, callIndex) => ({
      id: newId("call"),
      call_index: callIndex,
      call_id: call.callId,
      name: call.name,
      arguments_raw: call.argumentsRaw,
      pre_grant: result.preGrants?.get(callIndex) ?? null,
    })),
  );
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
  const [row] = await run(on, commitStepStatement, {
    ...heldRunParams(held, events),
    nextJob: next,
    stepId: newId("stp"),
    stepIndex: step.index,
    attempt: step.attempt,
    tools: JSON.stringify(step.tools),
    finishReason,
    stopReason,
    usage: usage ? JSON.stringify(usage) : null,
    messageId: newId("msg"),
    runOrdinal: held.ordinal,
    message: JSON.stringify({
      role: "assistant",
      text: result.text,
      toolCalls: result.toolCalls,
      ...(result.reasoning?.length ? { reasoning: result.reasoning } : {}),
    }),
    calls,
  });
  if (!row || row.committed === 0) return null;
  const placement =
    row.placement_host !== null && row.placement_epoch !== null ? { hostId: row.placement_host, epoch: row.placement_epoch } : null;
  return { events: appendedEvents(held.sessionId, events, row), placement };
}

/**
 * endStepAttempt
 * Guard: the caller's transaction holds the run (fenced). Result: none. Records an attempt that
 * commits no answer: its last attempt failed (`failed`), or it is asked again (`completed`,
 * `empty_asked_again`), so the next claim counts one attempt more.
 */
const endStepAttemptStatement = statement<EndStepParams & { status: "failed" | "completed" }, { id: StepId }>(
  "end_step_attempt",
  endStepText(":status", ""),
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
  pg: { appendStepEvents, startStep, commitStep },
});
