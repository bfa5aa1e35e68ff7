import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { runs } from "../db/schema.js";
import type { NextJob } from "../queue/job-types.js";
import type { RunRow } from "../runs/run-lifecycle.js";

/**
 * A job's claim on its run. Succeeds only if the run still needs exactly this
 * job and no other live job holds it; bumps the fence so that whoever held the
 * run before can no longer commit (D4).
 */
export type Claim =
  | { kind: "claimed"; run: RunRow & { ordinal: number } }
  /** Another job holds a live lease on the run: retry after it lapses. */
  | { kind: "busy"; retryInMs: number }
  /** The run no longer needs this job (done, cancelled, or a duplicate). */
  | { kind: "gone"; reason: string };

export async function claimRun(
  tx: DbExecutor,
  runId: string,
  next: NextJob,
  owner: string,
  leaseMs: number,
): Promise<Claim> {
  const expected = JSON.stringify(next);
  const [run] = await tx
    .update(runs)
    .set({
      fence: sql`${runs.fence} + 1`,
      leaseOwner: owner,
      leaseUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})`,
      status: "running",
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(runs.id, runId),
        inArray(runs.status, ["queued", "running"]),
        sql`${runs.nextJob} = ${expected}::jsonb`,
        or(isNull(runs.leaseUntil), lt(runs.leaseUntil, sql`now()`), eq(runs.leaseOwner, owner)),
      ),
    )
    .returning();
  if (run) {
    if (run.ordinal === null) return { kind: "gone", reason: "run has no place in history" };
    return { kind: "claimed", run: { ...run, ordinal: run.ordinal } };
  }
  const current = await tx.execute<{ status: string; next_job: NextJob | null; live_ms: number | null }>(sql`
    select status, next_job,
      case when lease_until > now() then (extract(epoch from (lease_until - now())) * 1000)::int end as live_ms
    from runs where id = ${runId}
  `);
  const state = current.rows[0];
  if (!state) return { kind: "gone", reason: "run does not exist" };
  if (state.status !== "queued" && state.status !== "running") return { kind: "gone", reason: `run is ${state.status}` };
  if (!sameJob(state.next_job, next)) return { kind: "gone", reason: "run does not need this job" };
  if (state.live_ms !== null) return { kind: "busy", retryInMs: state.live_ms + 50 };
  return { kind: "gone", reason: "claim lost a race" };
}

/** jsonb orders keys its own way, so compare jobs by field. */
function sameJob(stored: NextJob | null, wanted: NextJob): boolean {
  if (!stored || stored.kind !== wanted.kind || stored.stepIndex !== wanted.stepIndex) return false;
  const resume = (job: NextJob) => (job.kind === "batch" ? job.resume : undefined);
  return resume(stored) === resume(wanted);
}
