import { workers } from "../db/schema.js";
import { col, rowOf, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import { repository } from "./repository.js";

/**
 * Liveness records of worker processes (SPEC D9). Every time here is Postgres's
 * own `now()`, so clocks of different hosts never disagree about who is stale.
 */

export type WorkerRow = typeof workers.$inferSelect;

const W = {
  id: col(workers.id),
  lastSeenAt: col(workers.lastSeenAt),
  stoppedAt: col(workers.stoppedAt),
  stopReason: col(workers.stopReason),
  jobs: col(workers.jobs),
  commands: col(workers.commands),
};

/**
 * renewWorker
 * Guard: none (a worker renews only its own row). Params: the worker's id, host, pid, jobs (JSON) and commands.
 * Result: whether the row had been marked `lost` before this renewal: the worker was taken for dead
 * (frozen, cut off) and its work taken over; it is live again from now on. Inserts the row the first time.
 */
const renewWorkerStatement = statement<{ id: string; host: string; pid: number; jobs: string; commands: number }, { wasLost: boolean }>(
  "renew_worker",
  `with previous as (select ${W.stopReason} as reason from ${tbl(workers)} where ${W.id} = :id)
   insert into ${tbl(workers)} (${W.id}, ${col(workers.host)}, ${col(workers.pid)}, ${W.jobs}, ${W.commands})
   values (:id, :host, :pid, :jobs::jsonb, :commands)
   on conflict (${W.id}) do update set ${W.lastSeenAt} = now(), ${W.jobs} = excluded.${W.jobs}, ${W.commands} = excluded.${W.commands},
     ${W.stoppedAt} = null, ${W.stopReason} = null
   returning coalesce((select reason from previous) = 'lost', false) as "wasLost"`,
);

async function renewWorker(
  on: Queryable,
  worker: { id: string; host: string; pid: number; jobs: Record<string, number>; commands: number },
): Promise<{ wasLost: boolean }> {
  const [row] = await run(on, renewWorkerStatement, { ...worker, jobs: JSON.stringify(worker.jobs) });
  return { wasLost: row?.wasLost ?? false };
}

/**
 * stopWorker
 * Guard: the row is not ended yet. Params: the worker's id. Result: none. A drained worker says so,
 * so nobody takes it for dead.
 */
const stopWorkerStatement = statement<{ id: string }>(
  "stop_worker",
  `update ${tbl(workers)} set ${W.stoppedAt} = now(), ${W.stopReason} = 'stopped' where ${W.id} = :id and ${W.stoppedAt} is null`,
);

async function stopWorker(on: Queryable, id: string): Promise<void> {
  await run(on, stopWorkerStatement, { id });
}

/**
 * claimLostWorkers
 * Guard: the row is live and has not been renewed for the given time. Params: that time,
 * the caller's own id (never itself), the most rows to claim.
 * Result: the workers this caller marked `lost`, with how long they had been silent. Exactly one
 * caller wins each, so only one sweeper takes over a dead worker's work.
 */
const claimLostWorkersStatement = statement<
  { silentSeconds: number; self: string; limit: number },
  { id: string; host: string; silentMs: number }
>(
  "claim_lost_workers",
  `update ${tbl(workers)} w set ${W.stoppedAt} = now(), ${W.stopReason} = 'lost'
   where w.${W.id} in (
     select ${W.id} from ${tbl(workers)}
     where ${W.stoppedAt} is null and ${W.lastSeenAt} < now() - make_interval(secs => :silentSeconds::float8) and ${W.id} <> :self
     order by ${W.lastSeenAt} limit :limit for update skip locked)
   returning w.${W.id} as "id", w.${col(workers.host)} as "host", (extract(epoch from now() - w.${W.lastSeenAt}) * 1000)::float8 as "silentMs"`,
);

function claimLostWorkers(
  on: Queryable,
  silentForMs: number,
  self: string,
  limit = 20,
): Promise<Array<{ id: string; host: string; silentMs: number }>> {
  return run(on, claimLostWorkersStatement, { silentSeconds: silentForMs / 1000, self, limit });
}

/**
 * liveWorkers
 * Guard: none (a read). Params: how long a live worker may be silent.
 * Result: the workers renewed within that time and not ended, oldest first.
 */
const liveWorkersStatement = statement<{ silentSeconds: number }, WorkerRow>(
  "live_workers",
  `select ${rowOf(workers)} from ${tbl(workers)}
   where ${W.stoppedAt} is null and ${W.lastSeenAt} >= now() - make_interval(secs => :silentSeconds::float8)
   order by ${col(workers.startedAt)}, ${W.id}`,
);

function liveWorkers(on: Queryable, silentForMs: number): Promise<WorkerRow[]> {
  return run(on, liveWorkersStatement, { silentSeconds: silentForMs / 1000 });
}

/**
 * pruneEndedWorkers
 * Guard: ended for longer than the given time. Params: that time. Result: how many rows went.
 */
const pruneEndedWorkersStatement = statement<{ olderThanSeconds: number }, { pruned: number }>(
  "prune_ended_workers",
  `with gone as (delete from ${tbl(workers)} where ${W.stoppedAt} < now() - make_interval(secs => :olderThanSeconds::float8) returning 1)
   select count(*)::int as pruned from gone`,
);

async function pruneEndedWorkers(on: Queryable, olderThanMs: number): Promise<number> {
  const [row] = await run(on, pruneEndedWorkersStatement, { olderThanSeconds: olderThanMs / 1000 });
  return row?.pruned ?? 0;
}

/**
 * endedWorkers
 * Guard: none (a read). Params: the worker ids.
 * Result: those recorded as ended (found dead or drained): their BullMQ jobs are not being worked on (D9).
 */
const endedWorkersStatement = statement<{ ids: readonly string[] }, { id: string }>(
  "ended_workers",
  `select ${W.id} as "id" from ${tbl(workers)} where ${W.id} = any(:ids::text[]) and ${W.stopReason} is not null`,
);

async function endedWorkers(on: Queryable, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  return new Set((await run(on, endedWorkersStatement, { ids })).map((row) => row.id));
}

/** `store.workers`. */
export const workersRepository = repository({
  pg: { renewWorker, stopWorker, claimLostWorkers, liveWorkers, pruneEndedWorkers, endedWorkers },
});
