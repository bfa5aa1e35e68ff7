import type { NewEvent, SessionEvent } from "../core/events.js";
import type { HistoryMessage, MessagePosition } from "../core/history.js";
import type { NextJob } from "../core/next-job.js";
import type { ApprovalPolicy } from "../core/policy.js";
import { claimableRunStatuses, type RunStatus } from "../core/run-status.js";
import { messages, projectPlacements, projects, runs, sessions, steps, toolCalls } from "../db/schema.js";
import { appendedColumns, appendedEvents, appendEventsText, type AppendedRow } from "./events.js";
import { decidedApprovalsJson, gateRulesOf, policiesColumns, policiesJoin, type StoredApproval } from "./gate-rules.js";
import type { HistoryEntry } from "./messages.js";
import { run, statement } from "./named-sql.js";
import type { CallRow, ClaimedRun, RunRow } from "./run-rows.js";
import { col, literals, rowFromJson, rowOf, tbl, type Queryable } from "./sql-text.js";
import { callsRunningSet, mayStartRunning } from "./tool-calls.js";
import type { CheckpointId, RunId } from "../ids.js";

/**
 * Claims of a run by its jobs (SPEC D4): the step job's and the batch job's, each one
 * statement that takes the lease, bumps the fence and reads what the job needs.
 */

const R = {
  id: col(runs.id),
  status: col(runs.status),
  fence: col(runs.fence),
  leaseOwner: col(runs.leaseOwner),
  leaseUntil: col(runs.leaseUntil),
  nextJob: col(runs.nextJob),
  updatedAt: col(runs.updatedAt),
};

/**
 * The claim both job kinds share. Guard: the run is claimable, still needs exactly
 * this job (`next_job`), and no other live lease holds it. Bumps the fence, so
 * whoever held the run before can no longer commit (D4). Params: `ClaimParams`.
 */
const claimCteWith = (guard = "") => `
  claimed as (
    update ${tbl(runs)} set ${R.fence} = ${R.fence} + 1, ${R.leaseOwner} = :owner,
      ${R.leaseUntil} = now() + make_interval(secs => :leaseSeconds::float8), ${R.status} = 'running', ${R.updatedAt} = now()
    where ${R.id} = :runId and ${R.status} in (${literals(claimableRunStatuses)}) and ${R.nextJob} = :job::jsonb
      and (${R.leaseUntil} is null or ${R.leaseUntil} < now() or ${R.leaseOwner} = :owner)${guard}
    returning ${rowOf(runs)}
  )`;
const claimCte = claimCteWith();

/**
 * The batch claim's placement fence (SPEC W3): the run's project is placed on the claiming
 * worker's host at the job's epoch. A job routed by an earlier placement (its host was found
 * dead, the project evicted) claims nothing: the placement's mover enqueued its successor.
 */
const placedHere = `exists (select 1 from ${tbl(sessions)} pse join ${tbl(projectPlacements)} pp on pp.${col(projectPlacements.projectId)} = pse.${col(sessions.projectId)}
        where pse.${col(sessions.id)} = ${tbl(runs)}.${col(runs.sessionId)} and pp.${col(projectPlacements.hostId)} = :hostId and pp.${col(projectPlacements.epoch)} = :placementEpoch::bigint)`;

/** What every claim takes: the run, the job's lease owner and length, the job (JSON) and its step. */
interface ClaimParams {
  runId: RunId;
  owner: string;
  leaseSeconds: number;
  job: string;
  stepIndex: number;
}

const position = [messages.runOrdinal, messages.stepIndex, messages.part, messages.callIndex]
  .map((column) => `m.${col(column)}`)
  .join(", ");

/**
 * claimStep
 * Guard: the claim above. Params: `ClaimParams`, and the history position the worker already has (`after*`).
 * Result: the run, the attempt the step reached before (0 for none), the tools the run's previous
 * step offered in their order (PR4: the step keeps that order), the run's history after that
 * position, and the tenant's and project's approval policies (the step's commit judges its calls
 * by them to start the batch's first group with its claim): all in one round trip.
 */
const claimStepStatement = statement<
  ClaimParams & { afterRunOrdinal: number; afterStepIndex: number; afterPart: number; afterCallIndex: number },
  RunRow & {
    stepAttempt: number;
    previousTools: string[];
    history: HistoryRow[];
    tenantPolicy: ApprovalPolicy;
    projectPolicy: ApprovalPolicy;
    historyEpoch: number;
  }
>(
  "claim_step",
  `with ${claimCte}
   select c.*, ${policiesColumns}, se.${col(sessions.historyEpoch)} as "historyEpoch", coalesce((select s.${col(steps.attempt)} from ${tbl(steps)} s where s.${col(steps.runId)} = :runId and s.${col(steps.index)} = :stepIndex), 0) as "stepAttempt",
     coalesce((select s.${col(steps.tools)} from ${tbl(steps)} s where s.${col(steps.runId)} = :runId and s.${col(steps.index)} < :stepIndex
               order by s.${col(steps.index)} desc limit 1), '[]'::jsonb) as "previousTools",
     coalesce((select jsonb_agg(jsonb_build_array(m.${col(messages.content)}, ${position}) order by ${position})
               from ${tbl(messages)} m
               where m.${col(messages.sessionId)} = c."sessionId" and m.${col(messages.tenantId)} = c."tenantId" and m.${col(messages.runOrdinal)} <= c."ordinal"
                 and m.${col(messages.branchId)} is null
                 and (${position}) > (:afterRunOrdinal::int, :afterStepIndex::int, :afterPart::int, :afterCallIndex::int)), '[]'::jsonb) as history
   from claimed c
   ${policiesJoin("c")}`,
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
  ClaimParams & { startPreGranted: boolean; hostId: string; placementEpoch: number },
  RunRow & {
    stepAttempt: number | null;
    stepTools: string[] | null;
    calls: Record<string, unknown>[];
    tenantPolicy: ApprovalPolicy;
    projectPolicy: ApprovalPolicy;
    decided: StoredApproval[];
    startedIds: string[];
    workspaceResetTo: CheckpointId | null;
  } & AppendedRow
>(
  "claim_batch",
  `with ${claimCteWith(`
      and ${placedHere}`)},
   step_row as (
     select s.${col(steps.id)} as id, s.${col(steps.attempt)} as attempt from ${tbl(steps)} s join claimed c on s.${col(steps.runId)} = c."id" and s.${col(steps.index)} = :stepIndex
   ),
   started as (
     update ${tbl(toolCalls)} tc set ${callsRunningSet('c."fence"', ":owner")}
     from claimed c, step_row s
     where tc.${col(toolCalls.stepId)} = s.id and tc.${col(toolCalls.preGrant)} is not null
       and tc.${col(toolCalls.status)} in (${mayStartRunning}) and (:job::jsonb ->> 'resume') is null and :startPreGranted::boolean
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
     ${policiesColumns}, ${decidedApprovalsJson(`tc.${col(toolCalls.stepId)} = s.${col(steps.id)}`)} as decided,
     p.${col(projects.workspaceResetTo)} as "workspaceResetTo"
   from claimed c
   left join ${tbl(steps)} s on s.${col(steps.runId)} = c."id" and s.${col(steps.index)} = :stepIndex
   ${policiesJoin("c")}`,
);

/**
 * claimState
 * Guard: none (a read). Params: the run.
 * Result: why a claim did not match: the run's status, its next job, and how long another lease still lives.
 */
const claimStateStatement = statement<
  { runId: RunId; hostId: string | null; placementEpoch: number | null },
  { status: RunStatus; next_job: NextJob | null; live_ms: number | null; placed_here: boolean }
>(
  "claim_state",
  `select ${R.status} as status, ${R.nextJob} as next_job,
     case when ${R.leaseUntil} > now() then (extract(epoch from (${R.leaseUntil} - now())) * 1000)::int end as live_ms,
     (:hostId::text is null or ${placedHere}) as placed_here
   from ${tbl(runs)} where ${R.id} = :runId`,
);

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
  /** The session's history epoch: a rewind bumps it, and a copy of the history from another epoch is stale. */
  historyEpoch: number;
  /** The tools the run's previous step offered, in their order; empty for the run's first step (PR4). */
  previousTools: string[];
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
  /** A rewind's or a fork's order: the workspace folder must be rebuilt from this checkpoint before any call runs (W2). */
  workspaceResetTo: CheckpointId | null;
}

export interface ClaimRequest {
  runId: RunId;
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
  const { stepAttempt, previousTools, history, tenantPolicy, projectPolicy, historyEpoch, ...claimed } = row;
  return claimedOrGone(claimed, {
    attempt: stepAttempt + 1,
    historyEpoch,
    previousTools,
    policies: [tenantPolicy, projectPolicy],
    history: history.map(([message, runOrdinal, stepIndex, part, callIndex]) => ({
      message,
      position: { runOrdinal, stepIndex, part, callIndex },
    })),
  });
}

export async function claimBatch(
  on: Queryable,
  request: ClaimRequest & { startPreGranted: boolean; placement: { hostId: string; epoch: number } },
): Promise<Claim<BatchClaim>> {
  const [row] = await run(on, claimBatchStatement, {
    ...claimParams(request),
    startPreGranted: request.startPreGranted,
    hostId: request.placement.hostId,
    placementEpoch: request.placement.epoch,
  });
  if (!row) return explainMissedClaim(on, request, request.placement);
  const {
    stepAttempt,
    stepTools,
    calls,
    tenantPolicy,
    projectPolicy,
    decided,
    startedIds,
    last_seq,
    appended_at,
    workspaceResetTo,
    ...claimed
  } = row;
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
    workspaceResetTo,
    ...gateRulesOf({ tenantPolicy, projectPolicy, decided }),
  });
}

function claimedOrGone<Extra>(row: RunRow, extra: Extra): Claim<Extra> {
  if (row.ordinal === null) return { kind: "gone", reason: "run has no place in history" };
  return { kind: "claimed", run: { ...row, ordinal: row.ordinal }, extra };
}

async function explainMissedClaim(
  on: Queryable,
  request: ClaimRequest,
  placement?: { hostId: string; epoch: number },
): Promise<{ kind: "busy"; retryInMs: number } | { kind: "gone"; reason: string }> {
  const [state] = await run(on, claimStateStatement, {
    runId: request.runId,
    hostId: placement?.hostId ?? null,
    placementEpoch: placement?.epoch ?? null,
  });
  if (!state) return { kind: "gone", reason: "run does not exist" };
  if (!(claimableRunStatuses as readonly string[]).includes(state.status)) return { kind: "gone", reason: `run is ${state.status}` };
  if (!sameJob(state.next_job, request.next)) return { kind: "gone", reason: "run does not need this job" };
  if (!state.placed_here) return { kind: "gone", reason: "the project is placed elsewhere now" };
  if (state.live_ms !== null) return { kind: "busy", retryInMs: state.live_ms + 50 };
  return { kind: "gone", reason: "claim lost a race" };
}

/** jsonb orders keys its own way, so compare jobs by field. */
function sameJob(stored: NextJob | null, wanted: NextJob): boolean {
  if (!stored || stored.kind !== wanted.kind || stored.stepIndex !== wanted.stepIndex) return false;
  const resume = (job: NextJob) => (job.kind === "batch" ? job.resume : undefined);
  return resume(stored) === resume(wanted);
}
