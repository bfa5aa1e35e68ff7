import { and, asc, desc, eq, type SQL, sql } from "drizzle-orm";
import type { CheckpointEntryKind, CheckpointReason } from "../core/checkpoint.js";
import type { Database } from "../db/client.js";
import { checkpointEntries, commands, contentBlobs, fileChanges, runs, sessions, toolCalls, workspaceCheckpoints } from "../db/schema.js";
import { type CheckpointId, newId, type ProjectId, type RunId, type SessionId, type TenantId } from "../ids.js";
import { repository } from "./repository.js";

/**
 * Workspace checkpoints (SPEC W1): a project's tree after each tool batch that could change it,
 * stored as deltas with a full tree every `fullEvery` checkpoints. Rows only: the bytes are
 * content blobs, put before the checkpoint's transaction (content-addressed, so a blob a crashed
 * attempt left behind is just a blob).
 */
export type CheckpointRow = typeof workspaceCheckpoints.$inferSelect;

/** The capturing host's stat of a file, as decimal strings (64-bit values). */
export interface CheckpointStat {
  dev: string;
  ino: string;
  mtimeNs: string;
  ctimeNs: string;
}

/** One entry as a tree holds it. */
export interface StoredEntry {
  path: string;
  kind: CheckpointEntryKind;
  mode: number;
  size: number;
  sha256: string | null;
  target: string | null;
  stat: CheckpointStat | null;
}

/** A delta's entry: one added or changed, or a path that went away. */
export type StoredChange = ({ removed: false } & StoredEntry) | { removed: true; path: string };

/** A full tree every this many checkpoints: a rebuild reads one full tree and at most this many deltas less one. */
export const fullCheckpointEvery = 16;

const entriesPerInsert = 2000;

export interface NewCheckpoint {
  tenantId: TenantId;
  projectId: ProjectId;
  sessionId: SessionId | null;
  runId: RunId | null;
  stepIndex: number | null;
  reason: CheckpointReason;
  entryCount: number;
  fileBytes: number;
  treeDigest: string;
}

/**
 * Serializes checkpoints of one project (two sessions of a project may close batches at once):
 * held until the transaction ends, so `latest` read after it is the base the new one is written on.
 */
async function lockProjectCheckpoints(tx: Database, projectId: ProjectId): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`foya:checkpoints:${projectId}`}))`);
}

async function latestCheckpoint(db: Database, tenantId: TenantId, projectId: ProjectId): Promise<CheckpointRow | undefined> {
  const [row] = await db
    .select()
    .from(workspaceCheckpoints)
    .where(and(eq(workspaceCheckpoints.tenantId, tenantId), eq(workspaceCheckpoints.projectId, projectId)))
    .orderBy(desc(workspaceCheckpoints.seq))
    .limit(1);
  return row;
}

/**
 * The project's latest checkpoint and the database's clock as it was read: work that ended before
 * that moment is in a capture that starts after it. The clock is a timestamptz text (microseconds).
 */
async function latestCheckpointAt(
  db: Database,
  tenantId: TenantId,
  projectId: ProjectId,
): Promise<{ latest: CheckpointRow | undefined; clock: string }> {
  const [row] = await db
    .select({ checkpoint: workspaceCheckpoints, clock: sql<string>`clock_timestamp()::text` })
    .from(workspaceCheckpoints)
    .where(and(eq(workspaceCheckpoints.tenantId, tenantId), eq(workspaceCheckpoints.projectId, projectId)))
    .orderBy(desc(workspaceCheckpoints.seq))
    .limit(1);
  if (row) return { latest: row.checkpoint, clock: row.clock };
  const result = await db.execute<{ clock: string }>(sql`select clock_timestamp()::text as clock`);
  return { latest: undefined, clock: (result.rows[0] as { clock: string }).clock };
}

/** A checkpoint written only as a delta on its base was asked for, and the base is no longer the project's latest. */
export class CheckpointBaseMovedError extends Error {
  constructor(baseId: CheckpointId | null) {
    super(`checkpoint base ${baseId ?? "(none)"} is no longer the project's latest`);
  }
}

/** A checkpoint's content was not all in the blob store when it was to be written: the caller stores it, then writes again. */
export class CheckpointBlobsMissingError extends Error {
  constructor(missing: number) {
    super(`${missing} blob(s) of the checkpoint are not stored`);
  }
}

async function checkpointOfTenant(db: Database, tenantId: TenantId, id: CheckpointId): Promise<CheckpointRow | undefined> {
  const [row] = await db
    .select()
    .from(workspaceCheckpoints)
    .where(and(eq(workspaceCheckpoints.id, id), eq(workspaceCheckpoints.tenantId, tenantId)));
  return row;
}

/**
 * Writes a checkpoint, under the project's checkpoint lock: a delta against `baseId` when that is
 * still the project's latest checkpoint and the chain since the last full tree is shorter than
 * `fullCheckpointEvery`; otherwise the whole tree (another session's checkpoint landed since the
 * capture, or the chain is long). The caller passes both forms so the choice stays here.
 */
async function insertCheckpoint(
  tx: Database,
  header: NewCheckpoint,
  body: {
    baseId: CheckpointId | null;
    changes: readonly StoredChange[];
    whole: () => readonly StoredEntry[];
    /** The tree is `baseId`'s with changes applied, not a capture of the whole folder: refused (`CheckpointBaseMovedError`) on any other base. */
    onlyOnBase?: boolean;
    /** Content the checkpoint needs and the caller did not see stored: refused (`CheckpointBlobsMissingError`) unless all are. */
    requiredDigests?: readonly string[];
  },
): Promise<CheckpointRow> {
  if (body.onlyOnBase && body.baseId !== null) return insertOnBase(tx, header, body.baseId, body.changes, body.requiredDigests ?? []);
  await lockProjectCheckpoints(tx, header.projectId);
  const latest = await latestCheckpoint(tx, header.tenantId, header.projectId);
  const base = latest !== undefined && latest.id === body.baseId ? latest : undefined;
  if (body.onlyOnBase && (latest?.id ?? null) !== body.baseId) throw new CheckpointBaseMovedError(body.baseId);
  const chain = base ? await deltasSinceFull(tx, base.id) : 0;
  const asDelta = base !== undefined && chain + 1 < fullCheckpointEvery;
  const id = newId("ckp");
  const [row] = await tx
    .insert(workspaceCheckpoints)
    .values({ id, ...header, seq: (latest?.seq ?? 0) + 1, baseId: asDelta ? base.id : null })
    .returning();
  const rows = asDelta ? body.changes : body.whole().map((entry) => ({ removed: false as const, ...entry }));
  for (let start = 0; start < rows.length; start += entriesPerInsert) {
    await tx
      .insert(checkpointEntries)
      .values(rows.slice(start, start + entriesPerInsert).map((change) => entryRow(id, header.tenantId, change)));
  }
  return row as CheckpointRow;
}

/**
 * A delta on a base the caller knows is still short of a full tree (the fast path of a batch whose
 * calls said what they changed): the project's lock, the header and its entries in one statement,
 * written only when `baseId` is the project's latest. The statement's snapshot is taken before its
 * lock is granted: a checkpoint committed while it waited is not seen by `base`, but its `seq`
 * then collides with this one's (unique per project), which is the same answer: the base moved.
 */
async function insertOnBase(
  tx: Database,
  header: NewCheckpoint,
  baseId: CheckpointId,
  changes: readonly StoredChange[],
  requiredDigests: readonly string[],
): Promise<CheckpointRow> {
  const id = newId("ckp");
  const entries = JSON.stringify(
    changes.map((change) => (change.removed ? { path: change.path, removed: true } : { ...change, removed: false })),
  );
  const query = sql`
    with locked as (select pg_advisory_xact_lock(hashtext(${`foya:checkpoints:${header.projectId}`})) as granted),
    base as (
      select c.id, c.seq from ${workspaceCheckpoints} c, locked
      where c.tenant_id = ${header.tenantId} and c.project_id = ${header.projectId} order by c.seq desc limit 1
    ),
    missing as (
      select count(*)::int as n from unnest(${`{${requiredDigests.join(",")}}`}::text[]) as d(sha256)
      where not exists (select 1 from ${contentBlobs} b where b.tenant_id = ${header.tenantId} and b.sha256 = d.sha256 and b.complete)
    ),
    header as (
      insert into ${workspaceCheckpoints} (id, tenant_id, project_id, session_id, run_id, step_index, seq, base_id, reason, entry_count, file_bytes, tree_digest)
      select ${id}, ${header.tenantId}, ${header.projectId}, ${header.sessionId}, ${header.runId}, ${header.stepIndex}, base.seq + 1, base.id,
        ${header.reason}, ${header.entryCount}, ${header.fileBytes}, ${header.treeDigest}
      from base, missing where base.id = ${baseId} and missing.n = 0
      returning id, tenant_id as "tenantId", project_id as "projectId", session_id as "sessionId", run_id as "runId",
        step_index as "stepIndex", seq, base_id as "baseId", reason, entry_count as "entryCount", file_bytes::float8 as "fileBytes",
        tree_digest as "treeDigest", created_at as "createdAt"
    ),
    entries as (
      insert into ${checkpointEntries} (checkpoint_id, tenant_id, path, removed, kind, mode, size, sha256, target, stat)
      select h.id, ${header.tenantId}, e.path, e.removed, e.kind, e.mode, e.size, e.sha256, e.target, e.stat
      from header h, jsonb_to_recordset(${entries}::jsonb)
        as e(path text, removed boolean, kind text, mode integer, size bigint, sha256 text, target text, stat jsonb)
    )
    select header.*, (select n from missing) as missing_blobs from (select 1) one left join header on true`;
  const result = await tx.execute<CheckpointRow & { missing_blobs: number }>(query).catch((error: unknown) => {
    throw isUniqueViolation(error) ? new CheckpointBaseMovedError(baseId) : error;
  });
  const { missing_blobs: missingBlobs, ...row } = result.rows[0] ?? { missing_blobs: 0 };
  if (missingBlobs > 0) throw new CheckpointBlobsMissingError(missingBlobs);
  if (!("id" in row) || row.id === null) throw new CheckpointBaseMovedError(baseId);
  return { ...row, createdAt: new Date(row.createdAt) } as CheckpointRow;
}

function isUniqueViolation(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return (error as { code?: unknown } | null)?.code === "23505" || cause?.code === "23505";
}

function entryRow(checkpointId: CheckpointId, tenantId: TenantId, change: StoredChange): typeof checkpointEntries.$inferInsert {
  if (change.removed) return { checkpointId, tenantId, path: change.path, removed: true };
  const { path, kind, mode, size, sha256, target, stat } = change;
  return { checkpointId, tenantId, path, removed: false, kind, mode, size, sha256, target, stat };
}

/**
 * Makes an earlier tree the project's latest (SPEC W2: a rewind, or a fork's first checkpoint):
 * a full checkpoint whose entries are `source`'s whole tree, resolved in one statement (each
 * path's entry from the nearest checkpoint of the chain, removals dropped); with no source, an
 * empty tree. The header carries the source's totals and digest. Host stamps are not copied: the
 * folder is rebuilt from it, with new inodes.
 */
async function copyCheckpoint(tx: Database, source: CheckpointId | null, header: NewCheckpoint): Promise<CheckpointRow> {
  await lockProjectCheckpoints(tx, header.projectId);
  const latest = await latestCheckpoint(tx, header.tenantId, header.projectId);
  const id = newId("ckp");
  const [row] = await tx
    .insert(workspaceCheckpoints)
    .values({ id, ...header, seq: (latest?.seq ?? 0) + 1, baseId: null })
    .returning();
  if (source !== null) {
    await tx.execute(sql`
      with recursive chain as (
        select id, base_id, 0 as depth from ${workspaceCheckpoints} where id = ${source} and tenant_id = ${header.tenantId}
        union all
        select c.id, c.base_id, chain.depth + 1 from ${workspaceCheckpoints} c join chain on c.id = chain.base_id
      ),
      nearest as (
        select distinct on (e.path) e.path, e.removed, e.kind, e.mode, e.size, e.sha256, e.target
        from chain join ${checkpointEntries} e on e.checkpoint_id = chain.id and e.tenant_id = ${header.tenantId}
        order by e.path, chain.depth
      )
      insert into ${checkpointEntries} (checkpoint_id, tenant_id, path, removed, kind, mode, size, sha256, target, stat)
      select ${id}, ${header.tenantId}, path, false, kind, mode, size, sha256, target, null from nearest where not removed`);
  }
  return row as CheckpointRow;
}

/** How many deltas lie between this checkpoint and the full tree it builds on (0 for a full one). */
async function deltasSinceFull(db: Database, id: CheckpointId): Promise<number> {
  const result = await db.execute<{ deltas: number }>(sql`
    with recursive chain as (
      select id, base_id, 0 as depth from ${workspaceCheckpoints} where id = ${id}
      union all
      select c.id, c.base_id, chain.depth + 1 from ${workspaceCheckpoints} c join chain on c.id = chain.base_id
    )
    select (count(*) - 1)::int as deltas from chain`);
  return result.rows[0]?.deltas ?? 0;
}

/**
 * The whole tree of a checkpoint: its full base's entries with every delta since applied in
 * order. Read in one statement, the chain ordered from the full tree to this checkpoint.
 */
async function checkpointTree(db: Database, id: CheckpointId): Promise<Map<string, StoredEntry>> {
  const result = await db.execute<{
    depth: number;
    path: string;
    removed: boolean;
    kind: CheckpointEntryKind | null;
    mode: number | null;
    size: string | number | null;
    sha256: string | null;
    target: string | null;
    stat: CheckpointStat | null;
  }>(sql`
    with recursive chain as (
      select id, base_id, 0 as depth from ${workspaceCheckpoints} where id = ${id}
      union all
      select c.id, c.base_id, chain.depth + 1 from ${workspaceCheckpoints} c join chain on c.id = chain.base_id
    )
    select chain.depth, e.path, e.removed, e.kind, e.mode, e.size, e.sha256, e.target, e.stat
    from chain join ${checkpointEntries} e on e.checkpoint_id = chain.id
    order by chain.depth desc`);
  const tree = new Map<string, StoredEntry>();
  for (const row of result.rows) {
    if (row.removed) {
      tree.delete(row.path);
      continue;
    }
    tree.set(row.path, {
      path: row.path,
      kind: row.kind as CheckpointEntryKind,
      mode: row.mode ?? 0,
      size: Number(row.size ?? 0),
      sha256: row.sha256,
      target: row.target,
      stat: row.stat,
    });
  }
  return tree;
}

/**
 * Whether anything of the project's own may have changed its workspace since this checkpoint: a
 * background command still running or ended since, or a tool call that ended since (this batch's
 * own, on a redelivery after a crash, included) or is running in another batch. Then a workspace
 * that differs from the checkpoint holds that work, not damage. The asking batch's calls marked
 * `running` at its claim have not started yet.
 */
async function workSince(db: Database, checkpoint: CheckpointRow, asking: { runId: RunId; stepIndex: number }): Promise<boolean> {
  const since = checkpoint.createdAt.toISOString();
  const result = await db.execute<{ ran: boolean }>(sql`
    select exists (
      select 1 from ${commands} c join ${sessions} s on s.id = c.session_id
      where s.project_id = ${checkpoint.projectId} and c.tenant_id = ${checkpoint.tenantId}
        and (c.status = 'running' or c.ended_at >= ${since}::timestamptz)
    ) or exists (
      select 1 from ${toolCalls} tc
      where tc.run_id in (${runsNotEndedBefore(sql`(select id from ${sessions} where project_id = ${checkpoint.projectId} and tenant_id = ${checkpoint.tenantId})`, since)})
        and (tc.ended_at >= ${since}::timestamptz
          or (tc.status = 'running' and not (tc.run_id = ${asking.runId} and tc.step_index = ${asking.stepIndex})))
    ) as ran`);
  return result.rows[0]?.ran === true;
}

/**
 * What may have changed the project's workspace since `since` (a `latestCheckpointAt` clock) other
 * than the calls `ownCalls` (tool_calls ids): a background command running or ended since, a file
 * change recorded since by another call (an interrupted command's layer, applied late) or reverted
 * since (a revert's transaction stamps its start, before its writes: 10 s of slack), and the tool
 * names of other calls running or ended since, for the caller to judge (reads change nothing).
 */
export interface WorkSince {
  commands: boolean;
  files: boolean;
  callNames: string[];
}

/**
 * `latestCheckpointAt` and, when the caller holds a tree of the project, `workSinceClock` since it
 * was captured, in one round trip: what a batch's checkpoint asks before its capture.
 */
async function latestWithWorkSince(
  db: Database,
  scope: { tenantId: TenantId; projectId: ProjectId },
  known: { since: string; ownCalls: readonly string[] } | null,
): Promise<{ latest: CheckpointRow | undefined; clock: string; work: WorkSince | null }> {
  if (known === null) return { ...(await latestCheckpointAt(db, scope.tenantId, scope.projectId)), work: null };
  const result = await db.execute<
    Record<keyof CheckpointRow, unknown> & { clock: string; commands: boolean; files: boolean; call_names: string[] }
  >(sql`
    with work as (select * from (with ${workSinceParts(scope, known.since, known.ownCalls)}) w)
    select l.*, clock_timestamp()::text as clock, work.commands, work.files, work.call_names
    from work left join lateral (
      select c.id, c.tenant_id as "tenantId", c.project_id as "projectId", c.session_id as "sessionId", c.run_id as "runId",
        c.step_index as "stepIndex", c.seq, c.base_id as "baseId", c.reason, c.entry_count as "entryCount",
        c.file_bytes::float8 as "fileBytes", c.tree_digest as "treeDigest", c.created_at as "createdAt"
      from ${workspaceCheckpoints} c where c.tenant_id = ${scope.tenantId} and c.project_id = ${scope.projectId}
      order by c.seq desc limit 1
    ) l on true`);
  const row = result.rows[0];
  if (!row) throw new Error("the latest checkpoint query answered no row");
  const { clock, commands, files, call_names, ...checkpoint } = row;
  const latest =
    checkpoint.id === null ? undefined : ({ ...checkpoint, createdAt: new Date(checkpoint.createdAt as string) } as CheckpointRow);
  return { latest, clock, work: { commands: commands !== false, files: files !== false, callNames: call_names ?? [] } };
}

/**
 * The runs of these sessions that had not ended by `since`: the only ones whose calls can have run
 * or ended since (a call ends before or with its run). Found by the runs' session index, so a
 * project's calls are never looked for in the whole `tool_calls` table.
 */
function runsNotEndedBefore(sessionIds: SQL, since: string): SQL {
  return sql`select r.id from ${runs} r where r.session_id in ${sessionIds} and (r.ended_at is null or r.ended_at >= ${since}::timestamptz)`;
}

/** `WorkSince` as the parts of a statement after `with`, selecting `commands`, `files` and `call_names`. */
function workSinceParts(scope: { tenantId: TenantId; projectId: ProjectId }, since: string, ownCalls: readonly string[]) {
  const own = sql`array[${sql.join(
    ownCalls.map((id) => sql`${id}`),
    sql`, `,
  )}]::text[]`;
  return sql`
    project_sessions as (
      select id from ${sessions} where project_id = ${scope.projectId} and tenant_id = ${scope.tenantId}
    )
    select
      exists (
        select 1 from ${commands} c where c.session_id in (select id from project_sessions)
          and (c.status = 'running' or c.ended_at >= ${since}::timestamptz)
      ) as commands,
      exists (
        select 1 from ${fileChanges} fc where fc.session_id in (select id from project_sessions)
          and ((fc.created_at >= ${since}::timestamptz and not (fc.tool_call_id = any(${own})))
            or fc.reverted_at >= ${since}::timestamptz - interval '10 seconds')
      ) as files,
      array(
        select distinct tc.name from ${toolCalls} tc
        where tc.run_id in (${runsNotEndedBefore(sql`(select id from project_sessions)`, since)})
          and (tc.status = 'running' or tc.ended_at >= ${since}::timestamptz) and not (tc.id = any(${own}))
      ) as call_names`;
}

/** A session's checkpoints, oldest first (bounded: a session's batches are bounded by its runs' step limits). */
async function checkpointsOfSession(db: Database, tenantId: TenantId, sessionId: SessionId): Promise<CheckpointRow[]> {
  return db
    .select()
    .from(workspaceCheckpoints)
    .where(and(eq(workspaceCheckpoints.tenantId, tenantId), eq(workspaceCheckpoints.sessionId, sessionId)))
    .orderBy(asc(workspaceCheckpoints.seq))
    .limit(10_000);
}

/** `store.checkpoints`. */
export const checkpointsRepository = repository({
  db: {
    latestCheckpoint,
    latestCheckpointAt,
    checkpointsOfSession,
    workSince,
    latestWithWorkSince,
    deltasSinceFull,
    checkpointOfTenant,
    insertCheckpoint,
    copyCheckpoint,
    checkpointTree,
  },
});
