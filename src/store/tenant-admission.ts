import { sql } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { projects, runs, sessions, steps, tenants, toolCalls } from "../db/schema.js";
import { tenantStoredBytes } from "./blobs.js";
import type { RunRow } from "./run-rows.js";
import { col, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import { repository } from "./repository.js";
import type { RunId, SessionId, TenantId } from "../ids.js";

/**
 * Fair admission of runs (SPEC X5). A run, sub-agents' included, is *admitted* when it gets its
 * place in history and its first job (`activateRun`); at most a tenant's `activeRuns` quota of
 * its runs are admitted and working at once (queued for a worker or running, and not waiting on
 * a sub-agent: `isWorkingRun`). A run past it holds its
 * session's slot without a place (`queued`, no ordinal) and waits, in order, for one of the
 * tenant's runs to end or to park. So a tenant's flood puts at most its quota of jobs into
 * the shared FIFO queues, and every other tenant's run enters behind at most that many of
 * them: the workers are shared in proportion to the quotas.
 *
 * The counts are read without a tenant-wide lock: runs started at the same instant may
 * admit one or two past the quota for a moment. A lock here would order against every
 * run's and session's locks, and fairness does not need the exact number.
 */

/**
 * A working run (`run` names the runs row: the table, or an alias): admitted (it has its place), queued for a worker or running,
 * and not waiting on a sub-agent. A run whose `agent` call is held by a child run (the call is
 * `running` with its child named, from the child's start to its end) lends its slot to that
 * child, which is admitted like any run: so children count against `activeRuns`, and a parent
 * waiting on its child never waits for its own slot (no deadlock, however deep).
 */
export function workingRunText(run: string): string {
  return `${run}.${col(runs.status)} in ('queued', 'running') and ${run}.${col(runs.ordinal)} is not null
    and not exists (select 1 from ${tbl(toolCalls)} w where w.${col(toolCalls.runId)} = ${run}.${col(runs.id)}
                      and w.${col(toolCalls.status)} = 'running' and w.${col(toolCalls.childRunId)} is not null)`;
}
const isWorkingRun = sql.raw(workingRunText(tbl(runs)));

/** The tenant's free slots: its `activeRuns` quota (its own override, else the deployment's) less its working runs, in one statement. */
async function freeRunSlots(tx: Database, tenantId: TenantId, deploymentQuota: number): Promise<number> {
  const { rows } = await tx.execute<{ free: number }>(sql`
    select coalesce((select (${tenants.quotas} ->> 'activeRuns')::int from ${tenants} where ${tenants.id} = ${tenantId}), ${deploymentQuota})
      - (select count(*)::int from ${runs} where ${runs.tenantId} = ${tenantId} and ${isWorkingRun}) as free`);
  return rows[0]?.free ?? 0;
}

/** The tenant's working runs: admitted, holding or waiting for a worker, and not waiting on a sub-agent. */
async function countWorkingRuns(tx: Database, tenantId: TenantId): Promise<number> {
  const { rows } = await tx.execute<{ count: number }>(sql`
    select count(*)::int as count from ${runs} where ${runs.tenantId} = ${tenantId} and ${isWorkingRun}`);
  return rows[0]?.count ?? 0;
}

/** The tenant's runs not admitted yet: holding their session's slot, or waiting behind its active run. */
async function countWaitingRuns(tx: Database, tenantId: TenantId): Promise<number> {
  const { rows } = await tx.execute<{ count: number }>(sql`
    select count(*)::int as count from ${runs}
    where ${runs.tenantId} = ${tenantId} and ${runs.status} = 'queued' and ${runs.ordinal} is null`);
  return rows[0]?.count ?? 0;
}

/** Makes a run its session's active run without admitting it: it waits for a slot of its tenant. */
async function holdSessionSlot(tx: Database, run: Pick<RunRow, "id" | "sessionId">): Promise<void> {
  await tx.execute(
    sql`update ${sessions} set ${sql.identifier(sessions.activeRunId.name)} = ${run.id} where ${sessions.id} = ${run.sessionId}`,
  );
}

/**
 * Up to `limit` of the tenant's runs waiting for a slot (holding their session's slot), locked;
 * rows another transaction holds are skipped (it is admitting or cancelling them). The deepest
 * sub-agents first, then the oldest: a child finishes work its root already started, where a new
 * turn would start more (with a small quota, every parent would otherwise start before any child
 * runs), and the deepest frees its ancestors soonest.
 */
async function runsWaitingForSlot(tx: Database, tenantId: TenantId, limit: number): Promise<RunRow[]> {
  if (limit <= 0) return [];
  const { rows } = await tx.execute<{ id: RunId }>(sql`
    select r.${sql.identifier(runs.id.name)} as id from ${runs} r
    join ${sessions} s on s.${sql.identifier(sessions.id.name)} = r.${sql.identifier(runs.sessionId.name)} and s.${sql.identifier(sessions.activeRunId.name)} = r.${sql.identifier(runs.id.name)}
    where r.${sql.identifier(runs.tenantId.name)} = ${tenantId} and r.${sql.identifier(runs.status.name)} = 'queued' and r.${sql.identifier(runs.ordinal.name)} is null
    order by s.${sql.identifier(sessions.depth.name)} desc, r.${sql.identifier(runs.createdAt.name)}, r.${sql.identifier(runs.id.name)}
    limit ${limit}
    for update of r skip locked`);
  if (rows.length === 0) return [];
  const ids = rows.map((row) => row.id);
  const found = await tx.query.runs.findMany({ where: (r, { inArray }) => inArray(r.id, ids) });
  return ids.map((id) => found.find((row) => row.id === id)).filter((row): row is RunRow => row !== undefined);
}

/** Tenants with runs waiting for a slot (the sweeper checks each has none free). */
async function tenantsWithWaitingRuns(pool: Queryable): Promise<TenantId[]> {
  const { rows } = await pool.query<{ tenant_id: TenantId }>(
    `select distinct r.tenant_id from runs r join sessions s on s.id = r.session_id and s.active_run_id = r.id where r.status = 'queued' and r.ordinal is null limit 1000`,
  );
  return rows.map((row) => row.tenant_id);
}

/** Model tokens (input and output) the tenant's steps recorded since midnight UTC. */
async function tokensToday(tx: Database, tenantId: TenantId): Promise<number> {
  const { rows } = await tx.execute<{ tokens: string }>(sql`
    select coalesce(sum(coalesce((${steps.usage} ->> 'inputTokens')::bigint, 0) + coalesce((${steps.usage} ->> 'outputTokens')::bigint, 0)), 0)::text as tokens
    from ${steps} where ${steps.tenantId} = ${tenantId} and ${steps.createdAt} >= date_trunc('day', now() at time zone 'utc') at time zone 'utc'`);
  return Number(rows[0]?.tokens ?? 0);
}

/** Bytes the tenant keeps in content blobs (file-change contents, checkpoints' files, chunked or not, complete or being written) and artifacts. */
async function storedBytes(tx: Database, tenantId: TenantId): Promise<number> {
  const { rows } = await tx.execute<{ bytes: string }>(sql`
    select ${tenantStoredBytes(tenantId)}::text as bytes`);
  return Number(rows[0]?.bytes ?? 0);
}

/**
 * workingRunsByTenant
 * Guard: none (a read). Params: none.
 * Result: per tenant, its working runs as admission counts them (the job priorities, src/queue/tenant-load.ts).
 */
const workingRunsByTenantStatement = statement<Record<string, never>, { tenant_id: TenantId; working: number }>(
  "working_runs_by_tenant",
  `select r.${col(runs.tenantId)} as tenant_id, count(*)::int as working from ${tbl(runs)} r
   where r.${col(runs.status)} in ('queued', 'running') and r.${col(runs.ordinal)} is not null
     and not exists (select 1 from ${tbl(toolCalls)} tc where tc.${col(toolCalls.runId)} = r.${col(runs.id)} and tc.${col(toolCalls.status)} = 'running' and tc.${col(toolCalls.childRunId)} is not null)
   group by r.${col(runs.tenantId)}`,
);

async function workingRunsByTenant(on: Queryable): Promise<Map<string, number>> {
  const rows = await run(on, workingRunsByTenantStatement, {});
  return new Map(rows.map((row) => [row.tenant_id, row.working]));
}

/**
 * newRunReads
 * Guard: none (reads, in the accepting transaction). Params: the tenant, the session.
 * Result: what accepting a turn checks first, in one round trip: the session, if live and of a
 * live project of this tenant (its active run and approval mode); the tenant's settings, if it
 * exists; and its runs waiting for a slot (the queuedRuns quota, SPEC X5).
 */
const newRunReadsStatement = statement<
  { tenantId: TenantId; sessionId: SessionId },
  {
    session_found: boolean;
    active_run_id: RunId | null;
    approval_mode: (typeof sessions.$inferSelect)["approvalMode"] | null;
    tenant_found: boolean;
    tool_uid_slot: number | null;
    full_access: boolean | null;
    tool_limits: (typeof tenants.$inferSelect)["toolLimits"] | null;
    quotas: (typeof tenants.$inferSelect)["quotas"] | null;
    waiting: number;
  }
>(
  "new_run_reads",
  `select s.${col(sessions.id)} is not null as session_found, s.${col(sessions.activeRunId)} as active_run_id,
     s.${col(sessions.approvalMode)} as approval_mode,
     t.${col(tenants.id)} is not null as tenant_found, t.${col(tenants.toolUidSlot)} as tool_uid_slot,
     t.${col(tenants.fullAccess)} as full_access, t.${col(tenants.toolLimits)} as tool_limits, t.${col(tenants.quotas)} as quotas,
     (select count(*)::int from ${tbl(runs)} r
      where r.${col(runs.tenantId)} = :tenantId and r.${col(runs.status)} = 'queued' and r.${col(runs.ordinal)} is null) as waiting
   from (select 1) as one
   left join ${tbl(tenants)} t on t.${col(tenants.id)} = :tenantId
   left join (${tbl(sessions)} s join ${tbl(projects)} p on p.${col(projects.id)} = s.${col(sessions.projectId)} and p.${col(projects.deletedAt)} is null)
     on s.${col(sessions.id)} = :sessionId and s.${col(sessions.tenantId)} = :tenantId and s.${col(sessions.deletedAt)} is null`,
);

export interface NewRunReads {
  session: { activeRunId: RunId | null; approvalMode: (typeof sessions.$inferSelect)["approvalMode"] } | undefined;
  tenant: Pick<typeof tenants.$inferSelect, "toolUidSlot" | "fullAccess" | "toolLimits" | "quotas"> | undefined;
  waitingRuns: number;
}

async function newRunReads(on: Queryable, tenantId: TenantId, sessionId: SessionId): Promise<NewRunReads> {
  const [row] = await run(on, newRunReadsStatement, { tenantId, sessionId });
  if (!row) throw new Error("new_run_reads answered no row");
  return {
    session: row.session_found
      ? { activeRunId: row.active_run_id, approvalMode: row.approval_mode as NonNullable<typeof row.approval_mode> }
      : undefined,
    tenant: row.tenant_found
      ? {
          toolUidSlot: row.tool_uid_slot as number,
          fullAccess: row.full_access as boolean,
          toolLimits: row.tool_limits ?? {},
          quotas: row.quotas ?? {},
        }
      : undefined,
    waitingRuns: row.waiting,
  };
}

/** `store.tenantAdmission`. */
export const tenantAdmissionRepository = repository({
  db: { freeRunSlots, countWorkingRuns, countWaitingRuns, holdSessionSlot, runsWaitingForSlot, tokensToday, storedBytes },
  pg: { newRunReads, tenantsWithWaitingRuns, workingRunsByTenant },
});
