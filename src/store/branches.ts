import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
import type { HistoryPoint } from "../core/branch.js";
import type { HistoryMessage } from "../core/history.js";
import { activeRunStatuses, type RunStatus } from "../core/run-status.js";
import type { Database } from "../db/client.js";
import { commands, events, messages, runs, sessionBranches, sessions, toolCalls, workspaceCheckpoints } from "../db/schema.js";
import type { BranchId, CallId, CheckpointId, CommandId, ProjectId, RunId, SessionId, TenantId } from "../ids.js";
import { repository } from "./repository.js";

/**
 * Forks and rewinds (SPEC W2) in the store: where a point of a session's history is, which
 * checkpoint holds the workspace of that point, what a rewind sets aside and brings back, and
 * the copy a fork makes. History that is set aside keeps its rows (`branch_id`): only what
 * readers of a session's history see changes.
 */
export type BranchRow = typeof sessionBranches.$inferSelect;

/** A run as a point is found in: its place and status, visible (not set aside) only. */
export interface PointRun {
  id: RunId;
  ordinal: number;
  status: RunStatus;
}

/** A visible run of the session by id, with its place; undefined when unknown, another session's or set aside. */
async function visibleRun(db: Database, tenantId: TenantId, sessionId: SessionId, runId: RunId): Promise<PointRun | undefined> {
  const [row] = await db
    .select({ id: runs.id, ordinal: runs.ordinal, status: runs.status })
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.tenantId, tenantId), eq(runs.sessionId, sessionId), isNull(runs.branchId)));
  return row && row.ordinal !== null ? { ...row, ordinal: row.ordinal } : undefined;
}

/** The session's latest visible run that has its place (an admitted run). */
async function latestVisibleRun(db: Database, tenantId: TenantId, sessionId: SessionId): Promise<PointRun | undefined> {
  const [row] = await db
    .select({ id: runs.id, ordinal: runs.ordinal, status: runs.status })
    .from(runs)
    .where(and(eq(runs.tenantId, tenantId), eq(runs.sessionId, sessionId), isNull(runs.branchId), sql`${runs.ordinal} is not null`))
    .orderBy(sql`${runs.ordinal} desc`)
    .limit(1);
  return row && row.ordinal !== null ? { ...row, ordinal: row.ordinal } : undefined;
}

/** A visible run of the session by its place. */
async function visibleRunAt(db: Database, tenantId: TenantId, sessionId: SessionId, ordinal: number): Promise<PointRun | undefined> {
  const [row] = await db
    .select({ id: runs.id, ordinal: runs.ordinal, status: runs.status })
    .from(runs)
    .where(and(eq(runs.tenantId, tenantId), eq(runs.sessionId, sessionId), eq(runs.ordinal, ordinal), isNull(runs.branchId)));
  return row && row.ordinal !== null ? { ...row, ordinal: row.ordinal } : undefined;
}

/** The session's first run, set aside or not: what a session-wide event is filed under when no run is visible. */
async function firstRunOfSession(db: Database, tenantId: TenantId, sessionId: SessionId): Promise<RunId | undefined> {
  const [row] = await db
    .select({ id: runs.id })
    .from(runs)
    .where(and(eq(runs.tenantId, tenantId), eq(runs.sessionId, sessionId), sql`${runs.ordinal} is not null`))
    .orderBy(asc(runs.ordinal))
    .limit(1);
  return row?.id;
}

/** A visible message of the session by id: its place and what it is. */
async function visibleMessage(
  db: Database,
  tenantId: TenantId,
  sessionId: SessionId,
  messageId: string,
): Promise<{ runOrdinal: number; stepIndex: number; role: HistoryMessage["role"] } | undefined> {
  const [row] = await db
    .select({ runOrdinal: messages.runOrdinal, stepIndex: messages.stepIndex, role: messages.role })
    .from(messages)
    .where(
      and(
        sql`${messages.id} = ${messageId}`,
        eq(messages.tenantId, tenantId),
        eq(messages.sessionId, sessionId),
        isNull(messages.branchId),
      ),
    );
  return row;
}

/** The visible messages of one step of a run, in order: what tells whether the step is finished. */
async function stepMessages(
  db: Database,
  tenantId: TenantId,
  sessionId: SessionId,
  at: { runOrdinal: number; stepIndex: number },
): Promise<HistoryMessage[]> {
  const rows = await db
    .select({ content: messages.content })
    .from(messages)
    .where(
      and(
        eq(messages.tenantId, tenantId),
        eq(messages.sessionId, sessionId),
        eq(messages.runOrdinal, at.runOrdinal),
        eq(messages.stepIndex, at.stepIndex),
        isNull(messages.branchId),
      ),
    )
    .orderBy(asc(messages.part), asc(messages.callIndex));
  return rows.map((row) => row.content);
}

/** Visible messages after the point: what a rewind would set aside (0: nothing follows it). */
async function messagesAfter(db: Database, tenantId: TenantId, sessionId: SessionId, point: HistoryPoint): Promise<number> {
  const result = await db.execute<{ n: number }>(sql`
    select count(*)::int as n from ${messages}
    where ${messages.tenantId} = ${tenantId} and ${messages.sessionId} = ${sessionId} and ${messages.branchId} is null
      and ${afterPoint(point)}`);
  return result.rows[0]?.n ?? 0;
}

/** The condition "this message lies after the point", on `messages` (as `alias`, or unqualified). */
function afterPoint(point: HistoryPoint, alias = "") {
  const ordinal = sql.raw(`${alias}run_ordinal`);
  const step = sql.raw(`${alias}step_index`);
  return point.stepIndex === null
    ? sql`${ordinal} > ${point.runOrdinal}`
    : sql`(${ordinal} > ${point.runOrdinal} or (${ordinal} = ${point.runOrdinal} and ${step} > ${point.stepIndex}))`;
}

/**
 * The checkpoint that holds the workspace as it stood at the point: the latest one taken at or
 * before it by the session's visible runs; with none, the project's latest one older than the
 * session's first checkpoint after the point (the tree the session started from); undefined for
 * "no checkpoint": an empty workspace.
 */
async function checkpointAtPoint(
  db: Database,
  scope: { tenantId: TenantId; sessionId: SessionId; projectId: ProjectId },
  point: HistoryPoint,
): Promise<CheckpointId | undefined> {
  const position =
    point.stepIndex === null
      ? sql`r.ordinal <= ${point.runOrdinal}`
      : sql`(r.ordinal < ${point.runOrdinal} or (r.ordinal = ${point.runOrdinal} and c.step_index <= ${point.stepIndex}))`;
  const result = await db.execute<{ id: CheckpointId | null }>(sql`
    with mine as (
      select c.seq, (${position}) as before_point
      from ${workspaceCheckpoints} c join ${runs} r on r.id = c.run_id
      where c.tenant_id = ${scope.tenantId} and c.project_id = ${scope.projectId} and r.session_id = ${scope.sessionId}
        and r.branch_id is null and r.ordinal is not null and c.reason <> 'before_rewind'
    ),
    chosen as (
      select coalesce(
        (select max(seq) from mine where before_point),
        (select max(c.seq) from ${workspaceCheckpoints} c
          where c.tenant_id = ${scope.tenantId} and c.project_id = ${scope.projectId}
            and c.seq < coalesce((select min(seq) from mine where not before_point), 2147483647))
      ) as seq
    )
    select c.id from ${workspaceCheckpoints} c, chosen
    where c.tenant_id = ${scope.tenantId} and c.project_id = ${scope.projectId} and c.seq = chosen.seq`);
  return result.rows[0]?.id ?? undefined;
}

/** A call after the point that started, with what tells whether its effects outlive the files. */
export interface AbandonedCallRow {
  id: CallId;
  callId: string;
  runId: RunId;
  stepIndex: number;
  name: string;
  childRunId: RunId | null;
  network: boolean;
  /** A shell call's raw arguments (whether it ran in the background); null for other tools. */
  shellArguments: string | null;
  /** Background commands its run started that are still running. */
  runningCommands: CommandId[];
}

/** The calls of visible runs after the point that started (oldest first, at most 1,000). */
async function startedCallsAfter(db: Database, tenantId: TenantId, sessionId: SessionId, point: HistoryPoint): Promise<AbandonedCallRow[]> {
  const after =
    point.stepIndex === null
      ? sql`r.ordinal > ${point.runOrdinal}`
      : sql`(r.ordinal > ${point.runOrdinal} or (r.ordinal = ${point.runOrdinal} and tc.step_index > ${point.stepIndex}))`;
  const result = await db.execute<{
    id: CallId;
    call_id: string;
    run_id: RunId;
    step_index: number;
    name: string;
    child_run_id: RunId | null;
    network: boolean | null;
    shell_arguments: string | null;
    running_commands: CommandId[];
  }>(sql`
    select tc.id, tc.call_id, tc.run_id, tc.step_index, tc.name, tc.child_run_id, (tc.pre_grant->>'network')::boolean as network,
      case when tc.name = 'bash' then left(tc.arguments_raw, 65536) end as shell_arguments,
      coalesce((select jsonb_agg(c.id) from ${commands} c where c.run_id = tc.run_id and c.status = 'running'), '[]'::jsonb) as running_commands
    from ${toolCalls} tc join ${runs} r on r.id = tc.run_id
    where tc.tenant_id = ${tenantId} and tc.session_id = ${sessionId} and r.branch_id is null and r.ordinal is not null
      and tc.started_at is not null and ${after}
    order by r.ordinal, tc.step_index, tc.call_index
    limit 1000`);
  return result.rows.map((row) => ({
    id: row.id,
    callId: row.call_id,
    runId: row.run_id,
    stepIndex: row.step_index,
    name: row.name,
    childRunId: row.child_run_id,
    network: row.network === true,
    shellArguments: row.shell_arguments,
    runningCommands: row.running_commands,
  }));
}

/**
 * The session's row, locked, when it is live and idle: no run of it queued, running or waiting
 * for a decision. Runs first, then the session: the lock order every transaction follows.
 */
async function lockIdleSession(
  tx: Database,
  tenantId: TenantId,
  sessionId: SessionId,
): Promise<{ kind: "idle"; session: typeof sessions.$inferSelect } | { kind: "busy"; runId: RunId } | { kind: "gone" }> {
  const open = await tx
    .select({ id: runs.id })
    .from(runs)
    .where(and(eq(runs.sessionId, sessionId), eq(runs.tenantId, tenantId), inArray(runs.status, [...activeRunStatuses])))
    .for("update");
  const [session] = await tx
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, sessionId), eq(sessions.tenantId, tenantId), isNull(sessions.deletedAt)))
    .for("update");
  if (!session) return { kind: "gone" };
  const first = open[0];
  return first ? { kind: "busy", runId: first.id } : { kind: "idle", session };
}

/**
 * Sets aside everything of the session's visible history after the point: later runs whole, the
 * rest of a cut run's messages. Bumps the session's history epoch (workers read its history again).
 * Answers how many messages it set aside, and the whole runs, in order.
 */
async function setAsideAfter(
  tx: Database,
  scope: { tenantId: TenantId; sessionId: SessionId },
  point: HistoryPoint,
  branchId: BranchId,
): Promise<{ messages: number; runIds: RunId[] }> {
  const moved = await tx.execute<{ n: number }>(sql`
    with moved as (
      update ${messages} set branch_id = ${branchId}
      where tenant_id = ${scope.tenantId} and session_id = ${scope.sessionId} and branch_id is null and ${afterPoint(point)}
      returning 1
    )
    select count(*)::int as n from moved`);
  const wholeRuns = await tx
    .update(runs)
    .set({ branchId })
    .where(
      and(
        eq(runs.tenantId, scope.tenantId),
        eq(runs.sessionId, scope.sessionId),
        isNull(runs.branchId),
        sql`${runs.ordinal} > ${point.runOrdinal}`,
      ),
    )
    .returning({ id: runs.id, ordinal: runs.ordinal });
  await bumpHistoryEpoch(tx, scope.sessionId);
  const runIds = wholeRuns.sort((a, b) => (a.ordinal ?? 0) - (b.ordinal ?? 0)).map((run) => run.id);
  return { messages: moved.rows[0]?.n ?? 0, runIds };
}

/** Brings a branch's runs and messages back into the session's history and marks the branch restored. */
async function bringBack(tx: Database, branch: BranchRow): Promise<void> {
  await tx.update(messages).set({ branchId: null }).where(eq(messages.branchId, branch.id));
  await tx.update(runs).set({ branchId: null }).where(eq(runs.branchId, branch.id));
  await tx.update(sessionBranches).set({ restoredAt: sql`now()` }).where(eq(sessionBranches.id, branch.id));
  await bumpHistoryEpoch(tx, branch.sessionId);
}

async function bumpHistoryEpoch(tx: Database, sessionId: SessionId): Promise<void> {
  await tx
    .update(sessions)
    .set({ historyEpoch: sql`${sessions.historyEpoch} + 1` })
    .where(eq(sessions.id, sessionId));
}

async function insertBranch(tx: Database, values: typeof sessionBranches.$inferInsert): Promise<BranchRow> {
  const [row] = await tx.insert(sessionBranches).values(values).returning();
  return row as BranchRow;
}

/** The session's branches, newest first, with the runs each set aside. */
async function branchesOfSession(db: Database, tenantId: TenantId, sessionId: SessionId): Promise<Array<BranchRow & { runIds: RunId[] }>> {
  const rows = await db
    .select({
      branch: sessionBranches,
      // The branch's id qualified by hand: in a select list drizzle renders a column bare ("id"), which here would be r.id.
      runIds: sql<
        RunId[]
      >`coalesce((select jsonb_agg(r.id order by r.ordinal) from ${runs} r where r.branch_id = ${sessionBranches}.${sql.identifier(sessionBranches.id.name)}), '[]'::jsonb)`,
    })
    .from(sessionBranches)
    .where(and(eq(sessionBranches.tenantId, tenantId), eq(sessionBranches.sessionId, sessionId)))
    .orderBy(sql`${sessionBranches.createdAt} desc`)
    .limit(1000);
  return rows.map((row) => ({ ...row.branch, runIds: row.runIds }));
}

/** This tenant's branch of this session (D8: anything else is not found). */
async function branchOfSession(db: Database, tenantId: TenantId, sessionId: SessionId, id: BranchId): Promise<BranchRow | undefined> {
  const [row] = await db
    .select()
    .from(sessionBranches)
    .where(and(eq(sessionBranches.id, id), eq(sessionBranches.tenantId, tenantId), eq(sessionBranches.sessionId, sessionId)));
  return row;
}

/** The messages a rewind set aside as this branch, in history order. */
async function messagesOfBranch(db: Database, tenantId: TenantId, branchId: BranchId): Promise<Array<typeof messages.$inferSelect>> {
  return db
    .select()
    .from(messages)
    .where(and(eq(messages.tenantId, tenantId), eq(messages.branchId, branchId)))
    .orderBy(asc(messages.runOrdinal), asc(messages.stepIndex), asc(messages.part), asc(messages.callIndex));
}

/** SQL for a fresh id of a kind: 96 random bits, base64url, as `newId` makes them. */
const freshId = (prefix: string) =>
  `'${prefix}_' || translate(encode(substring(uuid_send(gen_random_uuid()) from 1 for 12), 'base64'), '+/', '-_')`;

/**
 * A fork's history (SPEC W2): the source's visible runs up to the point, their messages up to it,
 * and their events renumbered from 1, copied into the fork's session with new ids. The cut run
 * (the point lies inside it, or an earlier rewind cut it) has its events copied up to `cut.lastSeq`
 * and is copied as cancelled, as is a run still active. Data-modifying parts of a statement
 * always run in Postgres, referenced or not. Answers the copied runs (old id to new) and
 * the number of events copied.
 */
async function copyHistory(
  tx: Database,
  scope: { tenantId: TenantId; from: SessionId; to: SessionId },
  point: HistoryPoint,
  cut: { ordinal: number; lastSeq: number } | null,
): Promise<{ runs: Array<{ from: RunId; to: RunId; ordinal: number; cancelled: boolean }>; events: number }> {
  const active = sql.join(
    activeRunStatuses.map((status) => sql`${status}`),
    sql`, `,
  );
  const cutOrdinal = cut?.ordinal ?? -1;
  const result = await tx.execute<{ runs: Array<{ from: RunId; to: RunId; ordinal: number; cancelled: boolean }>; events: number }>(sql`
    with source_runs as (
      select r.*, ${sql.raw(freshId("run"))} as new_id, (r.ordinal = ${cutOrdinal} or r.status in (${active})) as cancelled
      from ${runs} r
      where r.tenant_id = ${scope.tenantId} and r.session_id = ${scope.from} and r.branch_id is null
        and r.ordinal is not null and r.ordinal <= ${point.runOrdinal}
    ),
    copied_runs as (
      insert into ${runs} (id, tenant_id, session_id, ordinal, status, input, step_index, next_job, activated_tools,
        on_interrupted, interruptions, error, created_at, updated_at, ended_at)
      select new_id, tenant_id, ${scope.to}, ordinal, case when cancelled then 'cancelled' else status end, input, step_index, null,
        activated_tools, on_interrupted, interruptions,
        case when cancelled then jsonb_build_object('code', 'forked', 'message', 'the session was forked inside this run; the rest of it stays in the source session') else error end,
        created_at, updated_at, coalesce(ended_at, now())
      from source_runs
      returning id
    ),
    copied_messages as (
      insert into ${messages} (id, tenant_id, session_id, run_id, run_ordinal, step_index, part, call_index, role, content, created_at)
      select ${sql.raw(freshId("msg"))}, m.tenant_id, ${scope.to}, s.new_id, m.run_ordinal, m.step_index, m.part, m.call_index, m.role, m.content, m.created_at
      from ${messages} m join source_runs s on s.id = m.run_id
      where m.tenant_id = ${scope.tenantId} and m.session_id = ${scope.from} and m.branch_id is null and not (${afterPoint(point, "m.")})
      returning 1
    ),
    source_events as (
      select e.*, s.new_id, row_number() over (order by e.seq) as new_seq
      from ${events} e join source_runs s on s.id = e.run_id
      where e.session_id = ${scope.from} and e.tenant_id = ${scope.tenantId} and (s.ordinal <> ${cutOrdinal} or e.seq <= ${cut?.lastSeq ?? 0})
    ),
    copied_events as (
      insert into ${events} (session_id, seq, tenant_id, run_id, step_index, attempt, type, data, created_at)
      select ${scope.to}, new_seq, tenant_id, new_id, step_index, attempt, type,
        case when type = 'run_start' then jsonb_set(data, '{runId}', to_jsonb(new_id)) else data end, created_at
      from source_events
      returning 1
    )
    select coalesce((select jsonb_agg(jsonb_build_object('from', id, 'to', new_id, 'ordinal', ordinal, 'cancelled', cancelled) order by ordinal)
                     from source_runs), '[]'::jsonb) as runs,
      (select count(*)::int from copied_events) as events`);
  const row = result.rows[0];
  return { runs: row?.runs ?? [], events: row?.events ?? 0 };
}

/**
 * When a fork takes only part of a run (the point lies inside it, or an earlier rewind cut it):
 * the last step it keeps; null when it takes the whole run.
 */
async function runCutAt(
  db: Database,
  tenantId: TenantId,
  sessionId: SessionId,
  ordinal: number,
  stepIndex: number | null,
): Promise<number | null> {
  const result = await db.execute<{ kept: number | null; cut: boolean }>(sql`
    with m as (
      select step_index, branch_id from ${messages}
      where tenant_id = ${tenantId} and session_id = ${sessionId} and run_ordinal = ${ordinal}
    ),
    k as (select max(step_index) as kept from m where branch_id is null and (${stepIndex}::int is null or step_index <= ${stepIndex}::int))
    select k.kept, exists (select 1 from m where m.step_index > k.kept) as cut from k`);
  const row = result.rows[0];
  return row?.cut && row.kept !== null ? row.kept : null;
}

/** The last event of a run at or before a step: where a fork's copy of the run's events ends. */
async function lastEventOfStep(db: Database, sessionId: SessionId, runId: RunId, stepIndex: number): Promise<number> {
  const result = await db.execute<{ seq: string | null }>(sql`
    select max(seq) as seq from ${events} where session_id = ${sessionId} and run_id = ${runId} and step_index <= ${stepIndex}`);
  return Number(result.rows[0]?.seq ?? 0);
}

/** Sets a fresh session's counters after a fork's copy: its runs' places and its events' numbers. */
async function setCopiedCounters(tx: Database, sessionId: SessionId, counters: { runCount: number; eventSeq: number }): Promise<void> {
  await tx.update(sessions).set(counters).where(eq(sessions.id, sessionId));
}

/** `store.branches`. */
export const branchesRepository = repository({
  db: {
    visibleRun,
    latestVisibleRun,
    visibleRunAt,
    visibleMessage,
    firstRunOfSession,
    stepMessages,
    messagesAfter,
    checkpointAtPoint,
    startedCallsAfter,
    lockIdleSession,
    setAsideAfter,
    bringBack,
    insertBranch,
    branchesOfSession,
    branchOfSession,
    messagesOfBranch,
    copyHistory,
    runCutAt,
    lastEventOfStep,
    setCopiedCounters,
  },
});
