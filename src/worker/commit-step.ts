import { sql } from "drizzle-orm";
import type { SessionEvent, StepRef } from "../core/events.js";
import type { AssistantToolCall } from "../core/history.js";
import type { DbExecutor } from "../db/client.js";
import { appendedEventsJson, appendEventsCte, eventPayload, toSessionEvents } from "../events/event-store.js";
import { newId } from "../ids.js";
import type { EventBody } from "../core/events.js";
import type { FinishReason, Usage } from "../providers/provider.js";
import type { RunRow } from "../runs/run-lifecycle.js";

export interface StepResult {
  text: string;
  toolCalls: AssistantToolCall[];
  /** `stopReason` is the provider's raw value, stored beside the normalized reason. */
  finish: { reason: FinishReason; stopReason?: string; usage?: Usage } | undefined;
  /** Live events the step's sink had not written yet; they go before `step_end`. */
  pendingEvents: EventBody[];
}

/**
 * Commits a model Step in one statement, only if this attempt still holds the
 * run's fence (D4): the run's next job (the tool batch, or none), the step's
 * end, the assistant message, the tool calls as `queued`, and the events.
 * Answers null when the fence was lost. With no tool calls the caller ends the
 * run in the same transaction.
 */
export async function commitStep(
  executor: DbExecutor,
  run: RunRow & { ordinal: number },
  step: { id: string; attempt: number; index: number },
  result: StepResult,
): Promise<SessionEvent[] | null> {
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
    })),
  );
  const events = eventPayload([
    ...result.pendingEvents.map((body) => ({ runId: run.id, step: stepRef, body })),
    {
      runId: run.id,
      step: stepRef,
      body: {
        type: "step_end",
        stepIndex: step.index,
        attempt: step.attempt,
        finishReason,
        ...(stopReason !== null ? { stopReason } : {}),
        ...(usage ? { usage } : {}),
        toolCalls: result.toolCalls.length,
      },
    },
  ]);
  const committed = sql`exists (select 1 from committed_run)`;
  const { rows } = await executor.execute<{ committed: number; events: Parameters<typeof toSessionEvents>[1] }>(sql`
    with committed_run as (
      update runs set next_job = ${next}::jsonb, redispatches = 0, lease_owner = null, lease_until = null, updated_at = now()
      where id = ${run.id} and fence = ${run.fence} and status = 'running'
      returning id
    ),
    ended_step as (
      update steps set status = 'completed', finish_reason = ${finishReason}, stop_reason = ${stopReason},
          usage = ${usage ? JSON.stringify(usage) : null}::jsonb, ended_at = now()
      where id = ${step.id} and ${committed}
    ),
    assistant_message as (
      insert into messages (id, tenant_id, session_id, run_id, run_ordinal, step_index, part, call_index, role, content)
      select ${newId("msg")}, ${run.tenantId}, ${run.sessionId}, ${run.id}, ${run.ordinal}, ${step.index}, 1, 0, 'assistant',
             ${JSON.stringify({ role: "assistant", text: result.text, toolCalls: result.toolCalls })}::jsonb
      from committed_run
      on conflict do nothing
    ),
    new_calls as (
      insert into tool_calls (id, tenant_id, session_id, run_id, step_id, step_index, call_index, call_id, name, arguments_raw, status)
      select c.id, ${run.tenantId}, ${run.sessionId}, ${run.id}, ${step.id}, ${step.index}, c.call_index, c.call_id, c.name, c.arguments_raw, 'queued'
      from committed_run, jsonb_to_recordset(${calls}::jsonb) as c(id text, call_index int, call_id text, name text, arguments_raw text)
      on conflict do nothing
    ),
    ${appendEventsCte(run.sessionId, run.tenantId, sql`${events}`, committed)}
    select (select count(*) from committed_run)::int as committed, ${appendedEventsJson} as events
  `);
  const row = rows[0];
  if (!row || row.committed === 0) return null;
  return toSessionEvents(run.sessionId, row.events);
}
