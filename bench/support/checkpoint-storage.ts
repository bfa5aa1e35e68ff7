import type pg from "pg";
import type { ProjectId, TenantId } from "../../src/ids.js";
import { fullCheckpointEvery } from "../../src/store/checkpoints.js";
import { type Distribution, distribution, mean, round, roundDistribution } from "./stats.js";

/**
 * What checkpoints of one project added to Postgres since a mark (SPEC W1): checkpoint_entries
 * rows and their bytes per checkpoint, delta and full tree apart, and content_blobs of the tenant
 * (each benchmark project has a tenant of its own). A full tree comes every `fullCheckpointEvery`
 * checkpoints, so the amortized figures count 15 deltas at their mean and one full tree.
 */
export interface CheckpointedProject {
  tenantId: TenantId;
  projectId: ProjectId;
}

export interface StorageMark {
  seq: number;
  blobBytes: number;
  blobRows: number;
}

export interface StorageFigures {
  checkpoints: number;
  fullTrees: number;
  deltaRows: Distribution;
  /** Row bytes as Postgres stores them (pg_column_size), the primary key index not counted. */
  deltaRowBytes: Distribution;
  fullTreeRows: number | null;
  fullTreeRowBytes: number | null;
  /** Per checkpoint over a cycle of 16: 15 deltas at their mean and one full tree. */
  amortizedRows: number;
  amortizedRowBytes: number;
  /** Bytes and rows of content_blobs the tenant gained, per checkpoint (per write turn). */
  blobBytesPerCheckpoint: number;
  blobRowsPerCheckpoint: number;
}

export async function storageMark(sql: pg.Pool, subject: CheckpointedProject): Promise<StorageMark> {
  const seq = await sql.query<{ seq: number | null }>("select max(seq) as seq from workspace_checkpoints where project_id = $1", [
    subject.projectId,
  ]);
  const blobs = await sql.query<{ bytes: string; n: string }>(
    "select coalesce(sum(size), 0) as bytes, count(*) as n from content_blobs where tenant_id = $1",
    [subject.tenantId],
  );
  return { seq: seq.rows[0]?.seq ?? 0, blobBytes: Number(blobs.rows[0]?.bytes), blobRows: Number(blobs.rows[0]?.n) };
}

export async function storageSince(
  sql: pg.Pool,
  subject: CheckpointedProject,
  mark: StorageMark,
  checkpointsExpected: number,
): Promise<StorageFigures> {
  const rows = await sql.query<{ full: boolean; n: string; bytes: string }>(
    `select c.base_id is null as full, count(e.path) as n, coalesce(sum(pg_column_size(e.*)), 0) as bytes
     from workspace_checkpoints c left join checkpoint_entries e on e.checkpoint_id = c.id
     where c.project_id = $1 and c.seq > $2 group by c.id, c.seq order by c.seq`,
    [subject.projectId, mark.seq],
  );
  if (rows.rows.length !== checkpointsExpected) throw new Error(`${rows.rows.length} checkpoints, ${checkpointsExpected} expected`);
  const deltas = rows.rows.filter((row) => !row.full);
  const fulls = rows.rows.filter((row) => row.full);
  const now = await storageMark(sql, subject);
  const deltaRows = deltas.map((row) => Number(row.n));
  const deltaBytes = deltas.map((row) => Number(row.bytes));
  const fullRows = fulls.length > 0 ? mean(fulls.map((row) => Number(row.n))) : null;
  const fullBytes = fulls.length > 0 ? mean(fulls.map((row) => Number(row.bytes))) : null;
  const amortized = (deltaMean: number, full: number | null) =>
    round(full === null ? deltaMean : (deltaMean * (fullCheckpointEvery - 1) + full) / fullCheckpointEvery);
  return {
    checkpoints: rows.rows.length,
    fullTrees: fulls.length,
    deltaRows: roundDistribution(distribution(deltaRows)),
    deltaRowBytes: roundDistribution(distribution(deltaBytes)),
    fullTreeRows: fullRows === null ? null : round(fullRows),
    fullTreeRowBytes: fullBytes === null ? null : round(fullBytes),
    amortizedRows: amortized(mean(deltaRows), fullRows),
    amortizedRowBytes: amortized(mean(deltaBytes), fullBytes),
    blobBytesPerCheckpoint: round((now.blobBytes - mark.blobBytes) / checkpointsExpected),
    blobRowsPerCheckpoint: round((now.blobRows - mark.blobRows) / checkpointsExpected),
  };
}
