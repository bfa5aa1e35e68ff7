import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
import type { NewEvent, SessionEvent } from "../core/events.js";
import type { HistoryMessage, MessagePosition } from "../core/history.js";
import { toolCallStatusesLeadingTo } from "../core/tool-call-status.js";
import type { ApprovalPolicy } from "../core/policy.js";
import {
  activeRunStatuses,
  claimableRunStatuses,
  runStatusesLeadingTo,
  type RunStatus,
  type TerminalRunStatus,
} from "../core/run-status.js";
import type { Database } from "../db/client.js";
import { approvals, messages, projects, runs, sessions, steps, tenants, toolCalls } from "../db/schema.js";
import { newId } from "../ids.js";
import type { HistoryEntry } from "./messages.js";
import { appendedColumns, appendedEvents, appendEventsText, type AppendedRow } from "./events.js";
import { col, literals, rowFromJson, rowOf, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import type { NextJob } from "../core/next-job.js";

/**
 * Transitions of `runs` (SPEC D2, D4). Each is one guarded statement; the
 * guard is the run's fence where a job owns the run, and the statuses
 * `runStatusesLeadingTo` allows where its status changes.
 */

export type RunRow = typeof runs.$inferSelect;
export type ClaimedRun = RunRow & { ordinal: number };
export type CallRow = typeof toolCalls.$inferSelect;

const R = {
  id: col(runs.id),
  status: col(runs.status),
  fence: col(runs.fence),
  leaseOwner: col(runs.leaseOwner),
  leaseUntil: col(runs.leaseUntil),
  nextJob: col(runs.nextJob),
  updatedAt: col(runs.updatedAt),
  sessionId: col(runs.sessionId),
  activatedTools: col(runs.activatedTools),
};

/**
 * The claim both job kinds share. Guard: the run is claimable, still needs exactly
 * this job (`next_job`), and no other live lease holds it. Bumps the fence, so
 * whoever held the run before can no longer commit (D4). Params: `ClaimParams`.
 */
const claimCte = `
  claimed as (
    update ${tbl(runs)} set ${R.fence} = ${R.fence} + 1, ${R.leaseOwner} = :owner,
      ${R.leaseUntil} = now() + make_interval(secs => :leaseSeconds::float8), ${R.status} = 'running', ${R.updatedAt} = now()
    where ${R.id} = :runId and ${R.status} in (${literals(claimableRunStatuses)}) and ${R.nextJob} = :job::jsonb
      and (${R.leaseUntil} is null or ${R.leaseUntil} < now() or ${R.leaseOwner} = :owner)
    returning ${rowOf(runs)}
  )`;

/** What every claim takes: the run, the job's lease owner and length, the job (JSON) and its step. */
interface ClaimParams {
  runId: string;
  owner: string;
  leaseSeconds: number;
  job: string;
  stepIndex: number;
}

const M = {
  position: [messages.runOrdinal, messages.stepIndex, messages.part, messages.callIndex].map((column) => `m.${col(column)}`).join(", "),
};

/**
 * claimStep
 * Guard: the claim above. Params: `ClaimParams`, and the history position the worker already has (`after*`).
 * Result: the run, the attempt the step reached before (0 for none), the run's history after that
 * position, and the tenant's and project's approval policies (the step's commit judges its calls
 * by them to start the batch's first group with its claim): all in one round trip.
 */
const claimStepStatement = statement<
  ClaimParams & { afterRunOrdinal: number; afterStepIndex: number; afterPart: number; afterCallIndex: number },
  RunRow & { stepAttempt: number; history: HistoryRow[]; tenantPolicy: ApprovalPolicy; projectPolicy: ApprovalPolicy }
>(
  "claim_step",
  `with ${claimCte}
   select c.*, t.${col(tenants.policy)} as "tenantPolicy", p.${col(projects.policy)} as "projectPolicy", coalesce((select s.${col(steps.attempt)} from ${tbl(steps)} s where s.${col(steps.runId)} = :runId and s.${col(steps.index)} = :stepIndex), 0) as "stepAttempt",
     coalesce((select jsonb_agg(jsonb_build_array(m.${col(messages.content)}, ${M.position}) order by ${M.position})
               from ${tbl(messages)} m
               where m.${col(messages.sessionId)} = c."sessionId" and m.${col(messages.tenantId)} = c."tenantId" and m.${col(messages.runOrdinal)} <= c."ordinal"
                 and (${M.position}) > (:afterRunOrdinal::int, :afterStepIndex::int, :afterPart::int, :afterCallIndex::int)), '[]'::jsonb) as history
   from claimed c
   join ${tbl(sessions)} se on se.${col(sessions.id)} = c."sessionId"
   join ${tbl(projects)} p on p.${col(projects.id)} = se.${col(sessions.projectId)}
   join ${tbl(tenants)} t on t.${col(tenants.id)} = p.${col(projects.tenantId)}`,
);

/** One history message as the step claim answers it: content, run ordinal, step index, part, call index. */
type HistoryRow = [HistoryMessage, number, number, MessagePosition["part"], number];

/**
 * claimBatch
 * Guard: the claim above. Params: `ClaimParams`, and whether the tenant's calls may start at once (`startPreGranted`).
 * Result: the run; the step's attempt and tools; its calls in model order; the
 * tenant's and the project's approval policies and the approvals already given
 * for the step's calls, read in the claim so a policy applies from the next claim on (S1).
 * On the batch's first claim (no `resume`), the calls the step's commit pre-granted (its first
 * group) are marked `running` in the same statement, with their `tool_update` events, unless
 * a call of the step is already running (a redelivery after a crash: the batch is interrupted)
 * or `startPreGranted` is false (the tenant's calls take slots of its `toolCalls` quota one by one, SPEC X5).
 */
const claimBatchStatement = statement<
  ClaimParams & { startPreGranted: boolean },
  RunRow & {
    stepAttempt: number | null;
    stepTools: string[] | null;
    calls: Record<string, unknown>[];
    tenantPolicy: ApprovalPolicy;
    projectPolicy: ApprovalPolicy;
    decided: StoredApproval[];
    startedIds: string[];
  } & AppendedRow
>(
  "claim_batch",
  `with ${claimCte},
   step_row as (
     select s.${col(steps.id)} as id, s.${col(steps.attempt)} as attempt from ${tbl(steps)} s join claimed c on s.${col(steps.runId)} = c."id" and s.${col(steps.index)} = :stepIndex
   ),
   started as (
     update ${tbl(toolCalls)} tc set ${col(toolCalls.status)} = 'running', ${col(toolCalls.execFence)} = c."fence", ${col(toolCalls.executedBy)} = :owner,
       ${col(toolCalls.startedAt)} = now()
     from claimed c, step_row s
     where tc.${col(toolCalls.stepId)} = s.id and tc.${col(toolCalls.preGrant)} is not null
       and tc.${col(toolCalls.status)} in (${literals(toolCallStatusesLeadingTo("running"))}) and (:job::jsonb ->> 'resume') is null and :startPreGranted::boolean
       and not exists (select 1 from ${tbl(toolCalls)} r where r.${col(toolCalls.stepId)} = s.id and r.${col(toolCalls.status)} = 'running' and r.${col(toolCalls.childRunId)} is null)
     returning tc.${col(toolCalls.id)} as id, tc.${col(toolCalls.callId)} as call_id, tc.${col(toolCalls.callIndex)} as call_index
   ),
   ${appendEventsText({
     sessionId: `(select "sessionId" from claimed)`,
     tenantId: `(select "tenantId" from claimed)`,
     // The body of \`tool_update { status: "running" }\` (src/core/events.ts), as markCallsRunning writes it.
     payload: `(select coalesce(jsonb_agg(jsonb_build_object('runId', :runId::text, 'stepIndex', :stepIndex::int, 'attempt', (select attempt from step_row), 'type', 'tool_update',
                  'data', jsonb_build_object('type', 'tool_update', 'callId', st.call_id, 'status', 'running')) order by st.call_index), '[]'::jsonb) from started st)`,
   })}
   select c.*, ${appendedColumns}, (select coalesce(jsonb_agg(st.id), '[]'::jsonb) from started st) as "startedIds", s.${col(steps.attempt)} as "stepAttempt", s.${col(steps.tools)} as "stepTools",
     coalesce((select jsonb_agg(to_jsonb(tc) order by tc.${col(toolCalls.callIndex)})
               from ${tbl(toolCalls)} tc where tc.${col(toolCalls.stepId)} = s.${col(steps.id)}), '[]'::jsonb) as calls,
     t.${col(tenants.policy)} as "tenantPolicy", p.${col(projects.policy)} as "projectPolicy",
     coalesce((select jsonb_agg(jsonb_build_object('toolCallId', a.${col(approvals.toolCallId)}, 'status', a.${col(approvals.status)},
                 'editedArguments', a.${col(approvals.editedArguments)}, 'grantsNetwork', a.${col(approvals.grantsNetwork)}))
               from ${tbl(approvals)} a join ${tbl(toolCalls)} tc on tc.${col(toolCalls.id)} = a.${col(approvals.toolCallId)}
               where tc.${col(toolCalls.stepId)} = s.${col(steps.id)} and a.${col(approvals.status)} = 'approved'), '[]'::jsonb) as decided
   from claimed c
   left join ${tbl(steps)} s on s.${col(steps.runId)} = c."id" and s.${col(steps.index)} = :stepIndex
   join ${tbl(sessions)} se on se.${col(sessions.id)} = c."sessionId"
   join ${tbl(projects)} p on p.${col(projects.id)} = se.${col(sessions.projectId)}
   join ${tbl(tenants)} t on t.${col(tenants.id)} = p.${col(projects.tenantId)}`,
);

/**
 * claimState
 * Guard: none (a read). Params: the run.
 * Result: why a claim did not match: the run's status, its next job, and how long another lease still lives.
 */
const claimStateStatement = statement<{ runId: string }, { status: RunStatus; next_job: NextJob | null; live_ms: number | null }>(
  "claim_state",
  `select ${R.status} as status, ${R.nextJob} as next_job,
     case when ${R.leaseUntil} > now() then (extract(epoch from (${R.leaseUntil} - now())) * 1000)::int end as live_ms
   from ${tbl(runs)} where ${R.id} = :runId`,
);

/** An approval a human already gave for one of the batch's calls. */
export interface StoredApproval {
  toolCallId: string;
  status: string;
  editedArguments: string | null;
  grantsNetwork: boolean;
}

export type Claim<Extra> =
  | { kind: "claimed"; run: ClaimedRun; extra: Extra }
  /** Another job holds a live lease on the run: retry after it lapses. */
  | { kind: "busy"; retryInMs: number }
  /** The run no longer needs this job (done, cancelled, or a duplicate). */
  | { kind: "gone"; reason: string };

export interface StepClaim {
  /** The attempt this claim starts: one more than any before it. */
  attempt: number;
  /** The run's history after the position the claim was given. */
  history: HistoryEntry[];
  /** The tenant's and the project's approval policies, as this claim read them. */
  policies: ApprovalPolicy[];
}

export interface BatchClaim {
  stepAttempt: number;
  stepTools: string[];
  /** The step's calls in model order; those this claim started show as `running` under its fence. */
  calls: CallRow[];
  /** The pre-granted calls this claim marked `running` (the batch's first group), and their events. */
  startedIds: ReadonlySet<string>;
  startedEvents: SessionEvent[];
  policies: ApprovalPolicy[];
  decided: Map<string, StoredApproval>;
}

interface ClaimRequest {
  runId: string;
  stepIndex: number;
  next: NextJob;
  owner: string;
  leaseMs: number;
}

/** Before every position: a claim given it reads the whole history. */
export const historyOrigin: MessagePosition = { runOrdinal: -1, stepIndex: -2, part: 0, callIndex: 0 };

function claimParams(request: ClaimRequest): ClaimParams {
  return {
    runId: request.runId,
    owner: request.owner,
    leaseSeconds: request.leaseMs / 1000,
    job: JSON.stringify(request.next),
    stepIndex: request.stepIndex,
  };
}

export async function claimStep(on: Queryable, request: ClaimRequest & { historyAfter: MessagePosition }): Promise<Claim<StepClaim>> {
  const after = request.historyAfter;
  const [row] = await run(on, claimStepStatement, {
    ...claimParams(request),
    afterRunOrdinal: after.runOrdinal,
    afterStepIndex: after.stepIndex,
    afterPart: after.part,
    afterCallIndex: after.callIndex,
  });
  if (!row) return explainMissedClaim(on, request);
  const { stepAttempt, history, tenantPolicy, projectPolicy, ...claimed } = row;
  return claimedOrGone(claimed, {
    attempt: stepAttempt + 1,
    policies: [tenantPolicy, projectPolicy],
    history: history.map(([message, runOrdinal, stepIndex, part, callIndex]) => ({
      message,
      position: { runOrdinal, stepIndex, part, callIndex },
    })),
  });
}

export async function claimBatch(on: Queryable, request: ClaimRequest & { startPreGranted: boolean }): Promise<Claim<BatchClaim>> {
  const [row] = await run(on, claimBatchStatement, { ...claimParams(request), startPreGranted: request.startPreGranted });
  if (!row) return explainMissedClaim(on, request);
  const { stepAttempt, stepTools, calls, tenantPolicy, projectPolicy, decided, startedIds, last_seq, appended_at, ...claimed } = row;
  const started = new Set(startedIds);
  const attempt = stepAttempt ?? 1;
  // The calls were read before the statement's own marks: those it started are running under its fence.
  const rows = calls.map((json) => rowFromJson(toolCalls, json));
  const startedCalls = rows.filter((call) => started.has(call.id));
  const ref = { index: request.stepIndex, attempt };
  const startEvents: NewEvent[] = startedCalls.map((call) => ({
    runId: claimed.id,
    step: ref,
    body: { type: "tool_update", callId: call.callId, status: "running" },
  }));
  return claimedOrGone(claimed, {
    stepAttempt: attempt,
    stepTools: stepTools ?? [],
    calls: rows.map((call) =>
      started.has(call.id) ? { ...call, status: "running", execFence: claimed.fence, executedBy: request.owner } : call,
    ),
    startedIds: started,
    startedEvents: appendedEvents(claimed.sessionId, startEvents, { last_seq, appended_at }),
    policies: [tenantPolicy, projectPolicy],
    decided: new Map(decided.map((approval) => [approval.toolCallId, approval])),
  });
}

function claimedOrGone<Extra>(row: RunRow, extra: Extra): Claim<Extra> {
  if (row.ordinal === null) return { kind: "gone", reason: "run has no place in history" };
  return { kind: "claimed", run: { ...row, ordinal: row.ordinal }, extra };
}

async function explainMissedClaim(
  on: Queryable,
  request: ClaimRequest,
): Promise<{ kind: "busy"; retryInMs: number } | { kind: "gone"; reason: string }> {
  const [state] = await run(on, claimStateStatement, { runId: request.runId });
  if (!state) return { kind: "gone", reason: "run does not exist" };
  if (!(claimableRunStatuses as readonly string[]).includes(state.status)) return { kind: "gone", reason: `run is ${state.status}` };
  if (!sameJob(state.next_job, request.next)) return { kind: "gone", reason: "run does not need this job" };
  if (state.live_ms !== null) return { kind: "busy", retryInMs: state.live_ms + 50 };
  return { kind: "gone", reason: "claim lost a race" };
}

/** jsonb orders keys its own way, so compare jobs by field. */
function sameJob(stored: NextJob | null, wanted: NextJob): boolean {
  if (!stored || stored.kind !== wanted.kind || stored.stepIndex !== wanted.stepIndex) return false;
  const resume = (job: NextJob) => (job.kind === "batch" ? job.resume : undefined);
  return resume(stored) === resume(wanted);
}

/**
 * renewLeases
 * Guard: the lease is held by one of these owners. Params: the owners, the lease's length.
 * Result: none. One statement per tick for every job of a process.
 */
const renewLeasesStatement = statement<{ owners: readonly string[]; leaseSeconds: number }>(
  "renew_leases",
  `update ${tbl(runs)} set ${R.leaseUntil} = now() + make_interval(secs => :leaseSeconds::float8) where ${R.leaseOwner} = any(:owners::text[])`,
);

export async function renewLeases(on: Queryable, owners: readonly string[], leaseMs: number): Promise<void> {
  await run(on, renewLeasesStatement, { owners, leaseSeconds: leaseMs / 1000 });
}

/**
 * addActivatedTools
 * Guard: the batch's fence, run running. Params: the run, its fence, the tool names (JSON).
 * Result: none; the names join the run's sorted, distinct list of activated deferred tools (R5).
 */
const addActivatedToolsStatement = statement<{ runId: string; fence: number; names: string }>(
  "add_activated_tools",
  `update ${tbl(runs)} set ${R.activatedTools} = (
     select coalesce(jsonb_agg(distinct name order by name), '[]'::jsonb)
     from jsonb_array_elements_text(${R.activatedTools} || :names::jsonb) as name)
   where ${R.id} = :runId and ${R.fence} = :fence and ${R.status} = 'running'`,
);

export async function addActivatedTools(on: Queryable, held: { id: string; fence: number }, names: readonly string[]): Promise<void> {
  await run(on, addActivatedToolsStatement, { runId: held.id, fence: held.fence, names: JSON.stringify(names) });
}

const fenced = (runRow: { id: string; fence: number }) =>
  and(eq(runs.id, runRow.id), eq(runs.fence, runRow.fence), eq(runs.status, "running"));

/**
 * Locks the run a job holds, for a transaction that reads and then writes its calls.
 * Guard: fence, running. Result: whether this attempt still holds the run.
 */
export async function lockHeldRun(tx: Database, held: { id: string; fence: number }): Promise<boolean> {
  const [locked] = await tx.select({ id: runs.id }).from(runs).where(fenced(held)).for("update");
  return locked !== undefined;
}

/** Locks any run by id, for decisions, cancellations and deliveries that start from outside its jobs. */
export async function lockRun(tx: Database, runId: string): Promise<RunRow | undefined> {
  const [row] = await tx.select().from(runs).where(eq(runs.id, runId)).for("update");
  return row;
}

/** Locks a run of one tenant by id: a cancel by request (another tenant's id is not found). */
export async function lockRunOfTenant(tx: Database, tenantId: string, runId: string): Promise<RunRow | undefined> {
  const [row] = await tx
    .select()
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.tenantId, tenantId)))
    .for("update");
  return row;
}

/** Locks a session's active and waiting runs (SPEC F4: deleting the session cancels them); runs before the session, the lock order. */
export async function lockOpenRunsOfSession(tx: Database, tenantId: string, sessionId: string): Promise<RunRow[]> {
  return tx
    .select()
    .from(runs)
    .where(and(eq(runs.sessionId, sessionId), eq(runs.tenantId, tenantId), inArray(runs.status, [...activeRunStatuses])))
    .for("update");
}

/** This tenant's run by id (SPEC D8: another tenant's id is not found). */
export async function runOfTenant(db: Database, tenantId: string, runId: string): Promise<RunRow | undefined> {
  const [run] = await db
    .select()
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.tenantId, tenantId)));
  return run;
}

/** A run's row as this transaction sees it. */
export async function readRun(tx: Database, runId: string): Promise<RunRow | undefined> {
  const [row] = await tx.select().from(runs).where(eq(runs.id, runId));
  return row;
}

/**
 * releaseForRetry
 * Guard: fence, running. Result: the run's new redispatch count, or undefined when the fence is lost.
 * The job gives the run back without committing anything (a step asked again, R5).
 */
export async function releaseForRetry(tx: Database, held: { id: string; fence: number }): Promise<number | undefined> {
  const [updated] = await tx
    .update(runs)
    .set({ redispatches: sql`${runs.redispatches} + 1`, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(fenced(held))
    .returning({ redispatches: runs.redispatches });
  return updated?.redispatches;
}

/**
 * parkRun
 * Guard: fence, running, and `status` reachable from running. Result: whether it parked.
 * The run waits with no job and no lease: for a decision (`awaiting_approval`, D6) or for sub-agents (`running`, A1).
 */
export async function parkRun(
  tx: Database,
  held: { id: string; fence: number },
  status: "awaiting_approval" | "running",
): Promise<boolean> {
  if (status !== "running" && !runStatusesLeadingTo(status).includes("running")) throw new Error(`a running run cannot become ${status}`);
  const parked = await tx
    .update(runs)
    .set({ status, nextJob: null, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(fenced(held))
    .returning({ id: runs.id });
  return parked.length > 0;
}

/**
 * moveToNextStep
 * Guard: fence, running, and the run still on the batch this job claimed (`next_job`). Result: whether it moved.
 */
export async function moveToNextStep(
  tx: Database,
  held: { id: string; fence: number; nextJob: NextJob | null },
  nextIndex: number,
): Promise<NextJob | undefined> {
  const next: NextJob = { kind: "step", stepIndex: nextIndex };
  const moved = await tx
    .update(runs)
    .set({ stepIndex: nextIndex, nextJob: next, redispatches: 0, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(and(fenced(held), sql`${runs.nextJob} = ${JSON.stringify(held.nextJob)}::jsonb`))
    .returning({ id: runs.id });
  return moved.length > 0 ? next : undefined;
}

/**
 * resumeParkedRun
 * Guard: no job, and a status from which `running` is reached or `running` itself (parked on sub-agents).
 * Result: the batch job to dispatch, or undefined when the run was not parked.
 */
export async function resumeParkedRun(
  tx: Database,
  parked: { id: string; fence: number },
  stepIndex: number,
): Promise<NextJob | undefined> {
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
 * redispatchLostJob
 * Guard: the run still needs the same job and nobody redispatched it since it was read.
 * Result: the new redispatch count (the job's id changes with it), or undefined.
 */
export async function redispatchLostJob(
  tx: Database,
  lost: { id: string; nextJob: NextJob; redispatches: number },
): Promise<number | undefined> {
  const [updated] = await tx
    .update(runs)
    .set({ redispatches: sql`${runs.redispatches} + 1`, updatedAt: sql`now()` })
    .where(
      and(eq(runs.id, lost.id), eq(runs.redispatches, lost.redispatches), sql`${runs.nextJob} = ${JSON.stringify(lost.nextJob)}::jsonb`),
    )
    .returning({ redispatches: runs.redispatches });
  return updated?.redispatches;
}

/**
 * finishRun
 * Guard: a status from which `status` is reached (`runStatusesLeadingTo`), and the fence when given.
 * Result: whether the run ended here. Bumps the fence, so no job of the run can commit after.
 */
export async function finishRun(
  tx: Database,
  runId: string,
  status: TerminalRunStatus,
  options: { fence?: number; error?: { code: string; message: string } },
): Promise<boolean> {
  const conditions = [eq(runs.id, runId), inArray(runs.status, runStatusesLeadingTo(status))];
  if (options.fence !== undefined) conditions.push(eq(runs.fence, options.fence));
  const updated = await tx
    .update(runs)
    .set({
      status,
      nextJob: null,
      leaseOwner: null,
      leaseUntil: null,
      fence: sql`${runs.fence} + 1`,
      error: options.error ?? null,
      endedAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(and(...conditions))
    .returning({ id: runs.id });
  return updated.length > 0;
}

/** insertRun: a new run, `queued`, with no place in history yet. */
export async function insertRun(
  tx: Database,
  values: { tenantId: string; sessionId: string; input: string; onInterrupted?: RunRow["onInterrupted"] },
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
export async function placeRun(tx: Database, queued: { id: string; sessionId: string }): Promise<{ ordinal: number; next: NextJob }> {
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
 * releaseSessionSlot
 * Guard: the run is the session's active run. Result: the oldest run waiting behind it
 * (locked), unless the session was deleted or `takeNext` is false.
 */
export async function releaseSessionSlot(tx: Database, sessionId: string, runId: string, takeNext: boolean): Promise<RunRow | undefined> {
  const [session] = await tx
    .update(sessions)
    .set({ activeRunId: null })
    .where(and(eq(sessions.id, sessionId), eq(sessions.activeRunId, runId)))
    .returning({ deletedAt: sessions.deletedAt });
  if (!session || session.deletedAt || !takeNext) return undefined;
  const [waiting] = await tx
    .select()
    .from(runs)
    .where(and(eq(runs.sessionId, sessionId), eq(runs.status, "queued"), isNull(runs.ordinal)))
    .orderBy(asc(runs.createdAt))
    .limit(1)
    .for("update");
  return waiting;
}

/**
 * releaseRunsOfWorker
 * Guard: the run is claimable and its lease is held by a job of this worker (owner `<worker>/<job>`).
 * Params: the worker's id. Result: the runs released, with what the sweeper needs to move them on.
 * Their leases end now, so the next claim takes them at once; the fence still refuses any late
 * commit of the old owner (D4). Used when the worker is found dead (D9).
 */
const releaseRunsOfWorkerStatement = statement<
  { workerId: string },
  Pick<RunRow, "id" | "tenantId" | "sessionId" | "ordinal" | "redispatches" | "status" | "nextJob">
>(
  "release_runs_of_worker",
  `update ${tbl(runs)} set ${R.leaseUntil} = now(), ${R.updatedAt} = now()
   where ${R.status} in (${literals(claimableRunStatuses)}) and left(${R.leaseOwner}, length(:workerId) + 1) = :workerId || '/'
   returning ${R.id} as "id", ${col(runs.tenantId)} as "tenantId", ${R.sessionId} as "sessionId", ${col(runs.ordinal)} as "ordinal",
     ${R.nextJob} as "nextJob", ${col(runs.redispatches)} as "redispatches", ${R.status} as "status"`,
);

export function releaseRunsOfWorker(on: Queryable, workerId: string) {
  return run(on, releaseRunsOfWorkerStatement, { workerId });
}

/**
 * countInterruption
 * Guard: the batch's fence, run running, fewer than `limit` interruptions so far. Params: the run,
 * its fence, the limit. Result: the run's new count, or undefined when it may not go on (D10).
 */
const countInterruptionStatement = statement<{ runId: string; fence: number; limit: number }, { interruptions: number }>(
  "count_interruption",
  `update ${tbl(runs)} set ${col(runs.interruptions)} = ${col(runs.interruptions)} + 1
   where ${R.id} = :runId and ${R.fence} = :fence and ${R.status} = 'running' and ${col(runs.interruptions)} < :limit
   returning ${col(runs.interruptions)} as "interruptions"`,
);

export async function countInterruption(on: Queryable, held: { id: string; fence: number }, limit: number): Promise<number | undefined> {
  const [row] = await run(on, countInterruptionStatement, { runId: held.id, fence: held.fence, limit });
  return row?.interruptions;
}

/**
 * lostJobCandidates
 * Guard: none (a read). Params: the grace time, the most rows to answer.
 * Result: runs that need a job, hold no live lease and have not moved for the grace time,
 * oldest first: what the sweeper asks BullMQ about (X4).
 */
const lostJobCandidatesStatement = statement<
  { graceSeconds: number; limit: number },
  Pick<RunRow, "id" | "tenantId" | "sessionId" | "ordinal" | "redispatches" | "status"> & { nextJob: NextJob }
>(
  "lost_job_candidates",
  `select ${R.id} as "id", ${col(runs.tenantId)} as "tenantId", ${R.sessionId} as "sessionId", ${col(runs.ordinal)} as "ordinal",
          ${R.nextJob} as "nextJob", ${col(runs.redispatches)} as "redispatches", ${R.status} as "status"
   from ${tbl(runs)}
   where ${R.nextJob} is not null and ${R.status} in (${literals(claimableRunStatuses)})
     and (${R.leaseUntil} is null or ${R.leaseUntil} < now())
     and ${R.updatedAt} < now() - make_interval(secs => :graceSeconds::float8)
   order by ${R.updatedAt}
   limit :limit`,
);

export function lostJobCandidates(on: Queryable, graceMs: number, limit: number) {
  return run(on, lostJobCandidatesStatement, { graceSeconds: graceMs / 1000, limit });
}

/**
 * gateRules
 * Guard: none (a read). Params: the project, the call ids.
 * Result: the tenant's and the project's approval policies and the approvals already given for
 * these calls: what a batch judges by when it plans again after its claim (settle).
 */
const gateRulesStatement = statement<
  { projectId: string; callIds: readonly string[] },
  { tenantPolicy: ApprovalPolicy; projectPolicy: ApprovalPolicy; decided: StoredApproval[] }
>(
  "gate_rules",
  `select t.${col(tenants.policy)} as "tenantPolicy", p.${col(projects.policy)} as "projectPolicy",
     coalesce((select jsonb_agg(jsonb_build_object('toolCallId', a.${col(approvals.toolCallId)}, 'status', a.${col(approvals.status)},
                 'editedArguments', a.${col(approvals.editedArguments)}, 'grantsNetwork', a.${col(approvals.grantsNetwork)}))
               from ${tbl(approvals)} a where a.${col(approvals.toolCallId)} = any(:callIds::text[]) and a.${col(approvals.status)} = 'approved'), '[]'::jsonb) as decided
   from ${tbl(projects)} p join ${tbl(tenants)} t on t.${col(tenants.id)} = p.${col(projects.tenantId)}
   where p.${col(projects.id)} = :projectId`,
);

export async function gateRules(
  on: Queryable,
  projectId: string,
  callIds: readonly string[],
): Promise<{ policies: ApprovalPolicy[]; decided: Map<string, StoredApproval> }> {
  const [row] = await run(on, gateRulesStatement, { projectId, callIds });
  if (!row) throw new Error(`project ${projectId} vanished`);
  return {
    policies: [row.tenantPolicy, row.projectPolicy],
    decided: new Map(row.decided.map((approval) => [approval.toolCallId, approval])),
  };
}
