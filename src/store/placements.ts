import { commands, projectPlacements, projects, runs, sessions, workers, workspaceCheckpoints } from "../db/schema.js";
import { activeRunStatuses } from "../core/run-status.js";
import { col, literals, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import { repository } from "./repository.js";
import type { ProjectId, RunId, TenantId } from "../ids.js";

/**
 * Where each project's workspace lives (SPEC W3): one host at a time, at an epoch that grows with
 * every placement. A placement holds while its host has a live worker: the hosts' liveness
 * records (`workers`, renewed every second) are its lease. Every time here is Postgres's `now()`.
 */

export interface Placement {
  hostId: string;
  epoch: number;
}

const P = {
  projectId: col(projectPlacements.projectId),
  tenantId: col(projectPlacements.tenantId),
  hostId: col(projectPlacements.hostId),
  epoch: col(projectPlacements.epoch),
  placedAt: col(projectPlacements.placedAt),
};

/** Hosts with a worker renewed within `:silentSeconds` and not ended. */
const liveHostsText = `select w.${col(workers.host)} as host_id from ${tbl(workers)} w
   where w.${col(workers.stoppedAt)} is null and w.${col(workers.lastSeenAt)} >= now() - make_interval(secs => :silentSeconds::float8)
   group by w.${col(workers.host)}`;

/**
 * placeProject
 * Guard: a placement on a live host is kept as it is; otherwise (none yet, released, or its host
 * silent) the project goes to the live host with the fewest placements, at the next epoch, unless
 * another caller placed it meanwhile (then nothing is returned and the caller reads again).
 * Params: the project, or a run of it; how long a live host may be silent.
 * Result: the placement, and whether this call made it; none when no host is live.
 */
const placeProjectStatement = statement<
  { projectId: ProjectId | null; runId: RunId | null; silentSeconds: number },
  { hostId: string; epoch: number; placed: boolean }
>(
  "place_project",
  `with target as (
     select se.${col(sessions.projectId)} as project_id, se.${col(sessions.tenantId)} as tenant_id from ${tbl(sessions)} se
       join ${tbl(runs)} r on r.${col(runs.sessionId)} = se.${col(sessions.id)} and r.${col(runs.id)} = :runId::text
     union all
     select p.${col(projects.id)}, p.${col(projects.tenantId)} from ${tbl(projects)} p where p.${col(projects.id)} = :projectId::text
   ),
   live as (${liveHostsText}),
   current as (
     select pp.${P.hostId} as host_id, pp.${P.epoch} as epoch from ${tbl(projectPlacements)} pp join target t on pp.${P.projectId} = t.project_id
   ),
   kept as (select host_id, epoch from current where host_id in (select host_id from live)),
   choice as (
     select l.host_id from live l left join ${tbl(projectPlacements)} pp on pp.${P.hostId} = l.host_id
     where not exists (select 1 from kept)
     group by l.host_id order by count(pp.${P.projectId}), random() limit 1
   ),
   placed as (
     insert into ${tbl(projectPlacements)} (${P.projectId}, ${P.tenantId}, ${P.hostId}, ${P.epoch})
     select t.project_id, t.tenant_id, ch.host_id, 1 from target t, choice ch
     on conflict (${P.projectId}) do update set ${P.hostId} = excluded.${P.hostId}, ${P.epoch} = ${tbl(projectPlacements)}.${P.epoch} + 1, ${P.placedAt} = now()
       where ${tbl(projectPlacements)}.${P.hostId} is null or ${tbl(projectPlacements)}.${P.hostId} not in (select host_id from live)
     returning ${P.hostId} as host_id, ${P.epoch} as epoch
   )
   select host_id as "hostId", epoch::float8 as epoch, false as placed from kept
   union all select host_id, epoch::float8, true from placed`,
);

/**
 * The project's placement, made if it has none on a live host. Undefined when no host is live.
 * Give the project, or a run of it.
 */
async function placeProject(
  on: Queryable,
  of: { projectId: ProjectId } | { runId: RunId },
  silentForMs: number,
): Promise<(Placement & { placed: boolean }) | undefined> {
  const params = {
    projectId: "projectId" in of ? of.projectId : null,
    runId: "runId" in of ? of.runId : null,
    silentSeconds: silentForMs / 1000,
  };
  // A concurrent placement makes the insert's guard refuse; the second read then keeps it.
  for (let attempt = 0; attempt < 3; attempt++) {
    const [row] = await run(on, placeProjectStatement, params);
    if (row) return row;
  }
  return undefined;
}

/**
 * placementOf
 * Guard: none (a read). Params: the project. Result: its placement, if any, and whether its host is live.
 */
const placementOfStatement = statement<
  { projectId: ProjectId; silentSeconds: number },
  { hostId: string | null; epoch: number; live: boolean }
>(
  "placement_of",
  `select ${P.hostId} as "hostId", ${P.epoch}::float8 as epoch, ${P.hostId} in (${liveHostsText}) as live
   from ${tbl(projectPlacements)} where ${P.projectId} = :projectId`,
);

async function placementOf(
  on: Queryable,
  projectId: ProjectId,
  silentForMs: number,
): Promise<{ hostId: string | null; epoch: number; live: boolean } | undefined> {
  const [row] = await run(on, placementOfStatement, { projectId, silentSeconds: silentForMs / 1000 });
  return row ? { ...row, live: row.live === true } : undefined;
}

/**
 * releaseHostPlacements
 * Guard: the host has no live worker (a host found dead, or drained). Params: the host; how long
 * a live host may be silent. Result: the projects released, with their tenants. Their next batch
 * is placed again, at the next epoch.
 */
const releaseHostPlacementsStatement = statement<{ hostId: string; silentSeconds: number }, { projectId: ProjectId; tenantId: TenantId }>(
  "release_host_placements",
  `update ${tbl(projectPlacements)} set ${P.hostId} = null
   where ${P.hostId} = :hostId and not exists (select 1 from (${liveHostsText}) l where l.host_id = :hostId)
   returning ${P.projectId} as "projectId", ${P.tenantId} as "tenantId"`,
);

function releaseHostPlacements(
  on: Queryable,
  hostId: string,
  silentForMs: number,
): Promise<Array<{ projectId: ProjectId; tenantId: TenantId }>> {
  return run(on, releaseHostPlacementsStatement, { hostId, silentSeconds: silentForMs / 1000 });
}

/**
 * evictPlacement
 * Guard: the project is placed on this host at this epoch and idle: no run of its sessions is
 * active and no background command of them runs. Params: project, host, epoch.
 * Result: whether it was released (the host may then delete its copy).
 */
const evictPlacementStatement = statement<{ projectId: ProjectId; hostId: string; epoch: number }, { projectId: ProjectId }>(
  "evict_placement",
  `update ${tbl(projectPlacements)} pp set ${P.hostId} = null
   where pp.${P.projectId} = :projectId and pp.${P.hostId} = :hostId and pp.${P.epoch} = :epoch
     and not exists (
       select 1 from ${tbl(runs)} r join ${tbl(sessions)} se on se.${col(sessions.id)} = r.${col(runs.sessionId)}
       where se.${col(sessions.projectId)} = :projectId and r.${col(runs.status)} in (${literals(activeRunStatuses)}))
     and not exists (
       select 1 from ${tbl(commands)} c join ${tbl(sessions)} se on se.${col(sessions.id)} = c.${col(commands.sessionId)}
       where se.${col(sessions.projectId)} = :projectId and c.${col(commands.status)} = 'running')
   returning pp.${P.projectId} as "projectId"`,
);

async function evictPlacement(on: Queryable, placement: { projectId: ProjectId; hostId: string; epoch: number }): Promise<boolean> {
  return (await run(on, evictPlacementStatement, placement)).length > 0;
}

/**
 * hostPlacements
 * Guard: none (a read). Params: the host. Result: the projects placed on it, with their epochs.
 */
const hostPlacementsStatement = statement<{ hostId: string }, { projectId: ProjectId; tenantId: TenantId; epoch: number }>(
  "host_placements",
  `select ${P.projectId} as "projectId", ${P.tenantId} as "tenantId", ${P.epoch}::float8 as epoch
   from ${tbl(projectPlacements)} where ${P.hostId} = :hostId`,
);

function hostPlacements(on: Queryable, hostId: string): Promise<Array<{ projectId: ProjectId; tenantId: TenantId; epoch: number }>> {
  return run(on, hostPlacementsStatement, { hostId });
}

/**
 * batchRunsOfProjects
 * Guard: none (a read). Params: projects. Result: their runs waiting for a batch job and held by
 * no live lease: a released host's queue may hold their jobs, which no live worker takes.
 */
const batchRunsOfProjectsStatement = statement<{ projectIds: readonly ProjectId[] }, { id: RunId }>(
  "batch_runs_of_projects",
  `select r.${col(runs.id)} as id from ${tbl(runs)} r join ${tbl(sessions)} se on se.${col(sessions.id)} = r.${col(runs.sessionId)}
   where se.${col(sessions.projectId)} = any(:projectIds::text[]) and r.${col(runs.status)} in (${literals(activeRunStatuses)})
     and r.${col(runs.nextJob)} ->> 'kind' = 'batch' and (r.${col(runs.leaseUntil)} is null or r.${col(runs.leaseUntil)} < now())`,
);

async function batchRunsOfProjects(on: Queryable, projectIds: readonly ProjectId[]): Promise<RunId[]> {
  if (projectIds.length === 0) return [];
  return (await run(on, batchRunsOfProjectsStatement, { projectIds })).map((row) => row.id);
}

/**
 * copySizes
 * Guard: none (a read). Params: projects. Result: each one's bytes by its latest checkpoint (0 without one).
 */
const copySizesStatement = statement<{ projectIds: readonly ProjectId[] }, { projectId: ProjectId; bytes: number }>(
  "copy_sizes",
  `select p.id as "projectId", coalesce((select wc.${col(workspaceCheckpoints.fileBytes)} from ${tbl(workspaceCheckpoints)} wc
       where wc.${col(workspaceCheckpoints.projectId)} = p.id order by wc.${col(workspaceCheckpoints.seq)} desc limit 1), 0)::float8 as bytes
   from unnest(:projectIds::text[]) as p(id)`,
);

async function copySizes(on: Queryable, projectIds: readonly ProjectId[]): Promise<Map<ProjectId, number>> {
  if (projectIds.length === 0) return new Map();
  return new Map((await run(on, copySizesStatement, { projectIds })).map((row) => [row.projectId, row.bytes]));
}

/** `store.placements`. */
export const placementsRepository = repository({
  pg: { placeProject, placementOf, releaseHostPlacements, evictPlacement, hostPlacements, batchRunsOfProjects, copySizes },
});
