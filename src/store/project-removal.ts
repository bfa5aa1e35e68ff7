import { and, eq, isNull, sql } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { projectPlacements, projects, workers } from "../db/schema.js";
import { repository } from "./repository.js";
import type { ProjectId, TenantId } from "../ids.js";

/**
 * The removal of deleted projects' files (SPEC F4), claimed by one worker at a time under a
 * lease: `DELETE /v1/projects/:id` only marks the project deleted, and a worker's removal loop
 * (src/worker/project-removal.ts) removes its workspace and trash in slices. A worker that dies
 * mid-removal leaves its lease to lapse; the next claim resumes from what is left. The files are
 * on the host the project is placed on (SPEC W3): while that host is live, only its workers claim
 * the removal; copies other hosts keep are removed by each host's own look at its copies
 * (`hostCopyStates`).
 */

export interface ProjectToRemove {
  id: ProjectId;
  tenantId: TenantId;
  workspacePath: string;
}

/** Hosts with a worker renewed within `silentSeconds` and not ended (as src/store/placements.ts counts them live). */
const liveHosts = (silentSeconds: number) => sql`select ${workers.host} from ${workers}
  where ${workers.stoppedAt} is null and ${workers.lastSeenAt} >= now() - make_interval(secs => ${silentSeconds}::float8)`;

/**
 * claimProjectRemoval
 * Guard: deleted, files not removed yet, no live lease of another worker (`skip locked`: two
 * workers never claim the same project), and not placed on another host that is live (that host
 * holds the files). Params: the worker, its host, the lease, how long a live host may be silent.
 * Result: the project, or undefined.
 */
async function claimProjectRemoval(
  db: DbExecutor,
  claimer: { owner: string; hostId: string; leaseMs: number; livenessTimeoutMs: number },
): Promise<ProjectToRemove | undefined> {
  const { owner, hostId, leaseMs } = claimer;
  const { rows } = await db.execute<{ id: ProjectId; tenantId: TenantId; workspacePath: string }>(sql`
    update ${projects} set ${sql.identifier(projects.removalOwner.name)} = ${owner},
      ${sql.identifier(projects.removalLeaseUntil.name)} = now() + make_interval(secs => ${leaseMs / 1000})
    where ${projects.id} = (
      select ${projects.id} from ${projects}
      where ${projects.deletedAt} is not null and ${projects.filesRemovedAt} is null
        and (${projects.removalLeaseUntil} is null or ${projects.removalLeaseUntil} < now())
        and not exists (
          select 1 from ${projectPlacements} where ${projectPlacements.projectId} = ${projects.id}
            and ${projectPlacements.hostId} <> ${hostId} and ${projectPlacements.hostId} in (${liveHosts(claimer.livenessTimeoutMs / 1000)}))
      order by ${projects.deletedAt} limit 1
      for update skip locked)
    returning ${projects.id} as "id", ${projects.tenantId} as "tenantId", ${projects.workspacePath} as "workspacePath"`);
  return rows[0];
}

/** What a host's copy of a project is worth keeping by (SPEC W3): whether the project is gone, and where it is placed. */
export interface HostCopyState {
  projectId: ProjectId;
  /** Deleted, or no such project. */
  deleted: boolean;
  /** Its placement's host (null: released, or never placed) and epoch (0: never placed). */
  hostId: string | null;
  epoch: number;
}

/**
 * hostCopyStates
 * Guard: none (a read). Params: projects a host holds copies of. Result: one state per project,
 * a project that no longer exists counted deleted.
 */
async function hostCopyStates(db: DbExecutor, projectIds: readonly ProjectId[]): Promise<HostCopyState[]> {
  if (projectIds.length === 0) return [];
  const { rows } = await db.execute<{ projectId: ProjectId; deleted: boolean; hostId: string | null; epoch: number }>(sql`
    select ids.id as "projectId", (p.${sql.identifier(projects.id.name)} is null or p.${sql.identifier(projects.deletedAt.name)} is not null) as deleted,
      pp.${sql.identifier(projectPlacements.hostId.name)} as "hostId", coalesce(pp.${sql.identifier(projectPlacements.epoch.name)}, 0)::float8 as epoch
    from unnest(array[${sql.join(
      projectIds.map((id) => sql`${id}`),
      sql`, `,
    )}]::text[]) as ids(id)
    left join ${projects} p on p.${sql.identifier(projects.id.name)} = ids.id
    left join ${projectPlacements} pp on pp.${sql.identifier(projectPlacements.projectId.name)} = ids.id`);
  return rows;
}

/**
 * renewProjectRemoval
 * Guard: this worker still holds the claim and the files are not marked removed. Result: whether it holds it now.
 */
async function renewProjectRemoval(db: DbExecutor, projectId: ProjectId, owner: string, leaseMs: number): Promise<boolean> {
  const renewed = await db
    .update(projects)
    .set({ removalLeaseUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .where(and(eq(projects.id, projectId), eq(projects.removalOwner, owner), isNull(projects.filesRemovedAt)))
    .returning({ id: projects.id });
  return renewed.length > 0;
}

/**
 * finishProjectRemoval
 * Guard: this worker holds the claim. Result: whether the project's files are now marked removed.
 */
async function finishProjectRemoval(db: DbExecutor, projectId: ProjectId, owner: string): Promise<boolean> {
  const finished = await db
    .update(projects)
    .set({ filesRemovedAt: sql`now()`, removalOwner: null, removalLeaseUntil: null })
    .where(and(eq(projects.id, projectId), eq(projects.removalOwner, owner), isNull(projects.filesRemovedAt)))
    .returning({ id: projects.id });
  return finished.length > 0;
}

/**
 * releaseProjectRemoval
 * Guard: this worker holds the claim. Ends its lease at once (a worker shutting down), so another worker resumes without waiting for it.
 */
async function releaseProjectRemoval(db: DbExecutor, projectId: ProjectId, owner: string): Promise<void> {
  await db
    .update(projects)
    .set({ removalOwner: null, removalLeaseUntil: null })
    .where(and(eq(projects.id, projectId), eq(projects.removalOwner, owner)));
}

/** Deleted projects whose files are not removed yet (a gauge, and tests). */
async function countProjectsWithFilesLeft(db: DbExecutor): Promise<number> {
  const { rows } = await db.execute<{ count: number }>(
    sql`select count(*)::int as count from ${projects} where ${projects.deletedAt} is not null and ${projects.filesRemovedAt} is null`,
  );
  return rows[0]?.count ?? 0;
}

/** `store.projectRemoval`. */
export const projectRemovalRepository = repository({
  db: { claimProjectRemoval, renewProjectRemoval, finishProjectRemoval, releaseProjectRemoval, countProjectsWithFilesLeft, hostCopyStates },
});
