import { and, eq, sql } from "drizzle-orm";
import type { NextJob } from "../core/next-job.js";
import { claimableRunStatuses } from "../core/run-status.js";
import type { Database } from "../db/client.js";
import { runs } from "../db/schema.js";
import { run, statement } from "./named-sql.js";
import type { RunRow } from "./run-rows.js";
import { col, literals, tbl, type Queryable } from "./sql-text.js";
import { heldBy } from "./run-transitions.js";
import type { RunId } from "../ids.js";

/**
 * Leases of runs and the jobs they need (SPEC D4, D9, X4): renewed by their holders, released
 * when a holder gives the run back or is found dead, and the runs whose job was lost found again.
 */

const R = {
  id: col(runs.id),
  status: col(runs.status),
  leaseOwner: col(runs.leaseOwner),
  leaseUntil: col(runs.leaseUntil),
  nextJob: col(runs.nextJob),
  updatedAt: col(runs.updatedAt),
  sessionId: col(runs.sessionId),
};

/**
 * renewLeases
 * Guard: the lease is held by one of these owners. Params: the owners, the lease's length.
 * Result: none. One statement per tick for every job of a process. A run whose row another
 * statement has locked (its own job's answer waiting on a session's row, say) is skipped this
 * tick rather than waited for: waiting would hold up the renewal of every other run of the
 * process behind that one row, and their leases would run out.
 */
const renewLeasesStatement = statement<{ owners: readonly string[]; leaseSeconds: number }>(
  "renew_leases",
  `update ${tbl(runs)} set ${R.leaseUntil} = now() + make_interval(secs => :leaseSeconds::float8)
   where ${R.id} in (select ${R.id} from ${tbl(runs)} where ${R.leaseOwner} = any(:owners::text[]) for update skip locked)
     and ${R.leaseOwner} = any(:owners::text[])`,
);

export async function renewLeases(on: Queryable, owners: readonly string[], leaseMs: number): Promise<void> {
  await run(on, renewLeasesStatement, { owners, leaseSeconds: leaseMs / 1000 });
}

/**
 * releaseForRetry
 * Guard: fence, running. Result: the run's new redispatch count, or undefined when the fence is lost.
 * The job gives the run back without committing anything (a step asked again, R5).
 */
export async function releaseForRetry(tx: Database, held: { id: RunId; fence: number }): Promise<number | undefined> {
  const [updated] = await tx
    .update(runs)
    .set({ redispatches: sql`${runs.redispatches} + 1`, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(heldBy(held))
    .returning({ redispatches: runs.redispatches });
  return updated?.redispatches;
}

/**
 * releaseLease
 * Guard: fence, running. Result: whether the lease was given back.
 * The job gives the run back without committing anything and waits in its queue, as it is,
 * to claim it again: a step waiting for its provider holds no lease (PR3).
 */
export async function releaseLease(tx: Database, held: { id: RunId; fence: number }): Promise<boolean> {
  const updated = await tx
    .update(runs)
    .set({ leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(heldBy(held))
    .returning({ id: runs.id });
  return updated.length > 0;
}

/**
 * redispatchLostJob
 * Guard: the run still needs the same job and nobody redispatched it since it was read.
 * Result: the new redispatch count (the job's id changes with it), or undefined.
 */
export async function redispatchLostJob(
  tx: Database,
  lost: { id: RunId; nextJob: NextJob; redispatches: number },
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
