import type { NewEvent, SessionEvent } from "../core/events.js";
import type { HistoryMessage, MessagePosition } from "../core/history.js";
import type { NextJob } from "../core/next-job.js";
import type { ApprovalPolicy } from "../core/policy.js";
import { claimableRunStatuses, type RunStatus } from "../core/run-status.js";
import { messages, projectPlacements, projects, runs, sessions, steps, toolCalls } from "../db/schema.js";
import { appendedEvents, appendEventsPerRowText, type AppendedRow } from "./events.js";
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
 * The claim both job kinds share, for each row of `req r` (the statement's rows, each with the
 * run, its job and lease owner and length). Guard, per row: the run is claimable, still needs
 * exactly this job (`next_job`), and no other live lease holds it. Bumps the fence, so whoever
 * held the run before can no longer commit (D4). Returns the row's `n` with the run.
 */
const claimCteWith = (guard = "") => {
  const run = (column: string) => `${tbl(runs)}.${column}`;
  return `
  claimed as (
    update ${tbl(runs)} set ${R.fence} = ${run(R.fence)} + 1, ${R.leaseOwner} = r.owner,
      ${R.leaseUntil} = now() + make_interval(secs => r.lease_seconds), ${R.status} = 'running', ${R.updatedAt} = now()
    from req r
    where ${run(R.id)} = r.run_id and ${run(R.status)} in (${literals(claimableRunStatuses)}) and ${run(R.nextJob)} = r.job
      and (${run(R.leaseUntil)} is null or ${run(R.leaseUntil)} < now() or ${run(R.leaseOwner)} = r.owner)${guard}
    returning r.n, ${rowOf(runs, tbl(runs))}
  )`;
};

/**
 * The batch claim's placement fence (SPEC W3): the run's project is placed on the claiming
 * worker's host at the job's epoch. A job routed by an earlier placement (its host was found
 * dead, the project evicted) claims nothing: the placement's mover enqueued its successor.
 */
const placedHereText = (
  hostId: string,
  epoch: string,
) => `exists (select 1 from ${tbl(sessions)} pse join ${tbl(projectPlacements)} pp on pp.${col(projectPlacements.projectId)} = pse.${col(sessions.projectId)}
        where pse.${col(sessions.id)} = ${tbl(runs)}.${col(runs.sessionId)} and pp.${col(projectPlacements.hostId)} = ${hostId} and pp.${col(projectPlacements.epoch)} = ${epoch})`;
const placedHere = placedHereText(":hostId", ":placementEpoch::bigint");

const position = [messages.runOrdinal, messages.stepIndex, messages.part, messages.callIndex]
  .map((column) => `m.${col(column)}`)
  .join(", ");

/**
 * claimSteps
 * Guard, per row: the claim above. Params: one `ClaimRow` per run: the claim's, and the history
 * position the worker already has (`after_*`).
 * Result per claimed row (`n`; a row whose guard failed answers nothing): the run, the attempt the
 * step reached before (0 for none), the tools the run's previous step offered in their order (PR4:
 * the step keeps that order), the run's history after that position, and the tenant's and
 * project's approval policies (the step's commit judges its calls by them to start the batch's
 * first group with its claim): all in one round trip, for as many runs as arrive together
 * (statement-batches.ts).
 */
interface ClaimRow {
  n: number;
  run_id: RunId;
  owner: string;
  lease_seconds: number;
  job: NextJob;
  step_index: number;
  after_run_ordinal: number;
  after_step_index: number;
  after_part: number;
  after_call_index: number;
}

const claimRowColumns = `n int, run_id text, owner text, lease_seconds float8, job jsonb, step_index int, after_run_ordinal int,
  after_step_index int, after_part int, after_call_index int`;

const claimStepsStatement = statement<
  { rows: string },
  RunRow & {
    n: number;
    stepAttempt: number;
    previousTools: string[];
    history: HistoryRow[];
    tenantPolicy: ApprovalPolicy;
    projectPolicy: ApprovalPolicy;
    historyEpoch: number;
  }
>(
  "claim_steps",
  `with req as (select * from jsonb_to_recordset(:rows::jsonb) as r(${claimRowColumns})),
   ${claimCteWith()}
   select c.*, ${policiesColumns}, se.${col(sessions.historyEpoch)} as "historyEpoch",
     coalesce((select s.${col(steps.attempt)} from ${tbl(steps)} s where s.${col(steps.runId)} = c."id" and s.${col(steps.index)} = r.step_index), 0) as "stepAttempt",
     coalesce((select s.${col(steps.tools)} from ${tbl(steps)} s where s.${col(steps.runId)} = c."id" and s.${col(steps.index)} < r.step_index
               order by s.${col(steps.index)} desc limit 1), '[]'::jsonb) as "previousTools",
     coalesce((select jsonb_agg(jsonb_build_array(m.${col(messages.content)}, ${position}) order by ${position})
               from ${tbl(messages)} m
               where m.${col(messages.sessionId)} = c."sessionId" and m.${col(messages.tenantId)} = c."tenantId" and m.${col(messages.runOrdinal)} <= c."ordinal"
                 and m.${col(messages.branchId)} is null
                 and (${position}) > (r.after_run_ordinal, r.after_step_index, r.after_part, r.after_call_index)), '[]'::jsonb) as history
   from claimed c
   join req r using (n)
   ${policiesJoin("c")}
   order by c.n`,
);

/** One history message as the step claim answers it: content, run ordinal, step index, part, call index. */
type HistoryRow = [HistoryMessage, number, number, MessagePosition["part"], number];

/**
 * claimBatches
 * Guard, per row: the claim above, and the placement fence (`placedHereText`). Params: one `BatchClaimRow`
 * per run: the claim's, whether the tenant's calls may start at once (`start_pre_granted`), and the
 * job's placement (host and epoch).
 * Result per claimed row (`n`; a row whose guard failed answers nothing): the run; the step's
 * attempt and tools; its calls in model order; the tenant's and the project's approval policies and
 * the approvals already given for the step's calls, read in the claim so a policy applies from the
 * next claim on (S1). On the batch's first claim (no `resume`), the calls the step's commit
 * pre-granted (its first group) are marked `running` in the same statement, with their
 * `tool_update` events, unless a call of the step is already running (a redelivery after a crash:
 * the batch is interrupted) or `start_pre_granted` is false (the tenant's calls take slots of its
 * `toolCalls` quota one by one, SPEC X5). Rows are of different sessions (their event counters
 * are bumped once per statement).
 */
interface BatchClaimRow {
  n: number;
  run_id: RunId;
  owner: string;
  lease_seconds: number;
  job: NextJob;
  step_index: number;
  start_pre_granted: boolean;
  host_id: string;
  placement_epoch: number;
}

const batchClaimRowColumns = `n int, run_id text, owner text, lease_seconds float8, job jsonb, step_index int, start_pre_granted boolean,
  host_id text, placement_epoch int8`;

type ClaimedBatchRow = RunRow & {
  n: number;
  stepAttempt: number | null;
  stepTools: string[] | null;
  calls: Record<string, unknown>[];
  tenantPolicy: ApprovalPolicy;
  projectPolicy: ApprovalPolicy;
  decided: StoredApproval[];
  startedIds: string[];
  workspaceResetTo: CheckpointId | null;
} & AppendedRow;

/**
 * `started_rows` builds each started call's `tool_update { status: "running" }` (src/core/events.ts) as markCallsRunning writes it.
 * `started` and `started_rows` read each row's values off `step_row` alone: the planner takes a CTE for one row and joins
 * several in nested loops, so joining `claimed` and `req` there (with the jsonb read of a job in the filter) cost rows × rows
 * (about 2 ms of a 30-row claim).
 */
const claimBatchesStatement = statement<{ rows: string }, ClaimedBatchRow>(
  "claim_batches",
  `with req as (select * from jsonb_to_recordset(:rows::jsonb) as r(${batchClaimRowColumns})),
   ${claimCteWith(`
      and ${placedHereText("r.host_id", "r.placement_epoch")}`)},
   step_row as (
     select c.n, s.${col(steps.id)} as id, s.${col(steps.attempt)} as attempt, c."fence" as fence, r.owner, r.step_index,
       c."id" as run_id, c."sessionId" as session_id, c."tenantId" as tenant_id,
       (r.job ->> 'resume') is null and r.start_pre_granted as starts_calls
     from claimed c join req r using (n) join ${tbl(steps)} s on s.${col(steps.runId)} = c."id" and s.${col(steps.index)} = r.step_index
   ),
   started as (
     update ${tbl(toolCalls)} tc set ${callsRunningSet("s.fence", "s.owner")}
     from step_row s
     where s.starts_calls and tc.${col(toolCalls.stepId)} = s.id and tc.${col(toolCalls.preGrant)} is not null
       and tc.${col(toolCalls.status)} in (${mayStartRunning})
       and not exists (select 1 from ${tbl(toolCalls)} o where o.${col(toolCalls.stepId)} = s.id and o.${col(toolCalls.status)} = 'running' and o.${col(toolCalls.childRunId)} is null)
     returning s.n, tc.${col(toolCalls.id)} as id, tc.${col(toolCalls.callId)} as call_id, tc.${col(toolCalls.callIndex)} as call_index
   ),
   started_rows as (
     select s.n, s.session_id, s.tenant_id,
       jsonb_agg(jsonb_build_object('runId', s.run_id, 'stepIndex', s.step_index, 'attempt', s.attempt, 'type', 'tool_update',
         'data', jsonb_build_object('type', 'tool_update', 'callId', st.call_id, 'status', 'running')) order by st.call_index) as events
     from started st join step_row s using (n)
     group by s.n, s.session_id, s.tenant_id
   ),
   ${appendEventsPerRowText("started_rows")}
   select c.*, b.last_seq::float8 as last_seq, now() as appended_at,
     (select coalesce(jsonb_agg(st.id), '[]'::jsonb) from started st where st.n = c.n) as "startedIds",
     s.${col(steps.attempt)} as "stepAttempt", s.${col(steps.tools)} as "stepTools",
     coalesce((select jsonb_agg(to_jsonb(tc) order by tc.${col(toolCalls.callIndex)})
               from ${tbl(toolCalls)} tc where tc.${col(toolCalls.stepId)} = s.${col(steps.id)}), '[]'::jsonb) as calls,
     ${policiesColumns}, ${decidedApprovalsJson(`tc.${col(toolCalls.stepId)} = s.${col(steps.id)}`)} as decided,
     p.${col(projects.workspaceResetTo)} as "workspaceResetTo"
   from claimed c
   join req r using (n)
   left join ${tbl(steps)} s on s.${col(steps.runId)} = c."id" and s.${col(steps.index)} = r.step_index
   left join event_seq_bump b using (n)
   ${policiesJoin("c")}
   order by c.n`,
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

/** What every claim row takes (`claimCteWith`'s columns): row `n` of the statement, for `request`. */
function claimRowOf(request: ClaimRequest, n: number) {
  return {
    n,
    run_id: request.runId,
    owner: request.owner,
    lease_seconds: request.leaseMs / 1000,
    job: request.next,
    step_index: request.stepIndex,
  };
}

export type StepClaimRequest = ClaimRequest & { historyAfter: MessagePosition };

/** Claims the step jobs of different runs in one statement; a request whose claim missed is explained on its own. */
export async function claimSteps(on: Queryable, requests: readonly StepClaimRequest[]): Promise<Claim<StepClaim>[]> {
  const rows: ClaimRow[] = requests.map((request, n) => ({
    ...claimRowOf(request, n),
    after_run_ordinal: request.historyAfter.runOrdinal,
    after_step_index: request.historyAfter.stepIndex,
    after_part: request.historyAfter.part,
    after_call_index: request.historyAfter.callIndex,
  }));
  const claimed = new Map((await run(on, claimStepsStatement, { rows: JSON.stringify(rows) })).map((row) => [row.n, row]));
  return Promise.all(
    requests.map((request, index) => {
      const row = claimed.get(index);
      if (!row) return explainMissedClaim(on, request);
      const { n: _n, stepAttempt, previousTools, history, tenantPolicy, projectPolicy, historyEpoch, ...run } = row;
      return claimedOrGone(run, {
        attempt: stepAttempt + 1,
        historyEpoch,
        previousTools,
        policies: [tenantPolicy, projectPolicy],
        history: history.map(([message, runOrdinal, stepIndex, part, callIndex]) => ({
          message,
          position: { runOrdinal, stepIndex, part, callIndex },
        })),
      });
    }),
  );
}

export async function claimStep(on: Queryable, request: StepClaimRequest): Promise<Claim<StepClaim>> {
  const [claim] = await claimSteps(on, [request]);
  return claim as Claim<StepClaim>;
}

export type BatchClaimRequest = ClaimRequest & { startPreGranted: boolean; placement: { hostId: string; epoch: number } };

/** Claims the batch jobs of runs of different sessions in one statement; a request whose claim missed is explained on its own. */
export async function claimBatches(on: Queryable, requests: readonly BatchClaimRequest[]): Promise<Claim<BatchClaim>[]> {
  const rows: BatchClaimRow[] = requests.map((request, n) => ({
    ...claimRowOf(request, n),
    start_pre_granted: request.startPreGranted,
    host_id: request.placement.hostId,
    placement_epoch: request.placement.epoch,
  }));
  const claimed = new Map((await run(on, claimBatchesStatement, { rows: JSON.stringify(rows) })).map((row) => [row.n, row]));
  return Promise.all(
    requests.map((request, index) => {
      const row = claimed.get(index);
      return row ? batchClaimOf(request, row) : explainMissedClaim(on, request, request.placement);
    }),
  );
}

export async function claimBatch(on: Queryable, request: BatchClaimRequest): Promise<Claim<BatchClaim>> {
  const [claim] = await claimBatches(on, [request]);
  return claim as Claim<BatchClaim>;
}

function batchClaimOf(request: BatchClaimRequest, row: ClaimedBatchRow): Claim<BatchClaim> {
  const {
    n: _n,
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
