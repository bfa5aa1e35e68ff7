import { and, eq, isNull, sql } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { projects } from "../db/schema.js";
import { repository } from "./repository.js";
import type { ProjectId, TenantId } from "../ids.js";

/**
 * The removal of deleted projects' files (SPEC F4), claimed by one worker at a time under a
 * lease: `DELETE /v1/projects/:id` only marks the project deleted, and a worker's removal loop
 * (src/worker/project-removal.ts) removes its workspace and trash in slices. A worker that dies
 * mid-removal leaves its lease to lapse; the next claim resumes from what is left.
 */

export interface ProjectToRemove {
  id: ProjectId;
  tenantId: TenantId;
  workspacePath: string;
}

/**
 * claimProjectRemoval
 * Guard: deleted, files not removed yet, and no live lease of another worker (`skip locked`: two
 * workers never claim the same project). Params: the worker, the lease. Result: the project, or undefined.
 */
async function claimProjectRemoval(db: DbExecutor, owner: string, leaseMs: number): Promise<ProjectToRemove | undefined> {
  const { rows } = await db.execute<{ id: ProjectId; tenantId: TenantId; workspacePath: string }>(sql`
    update ${projects} set ${sql.identifier(projects.removalOwner.name)} = ${owner},
      ${sql.identifier(projects.removalLeaseUntil.name)} = now() + make_interval(secs => ${leaseMs / 1000})
    where ${projects.id} = (
      select ${projects.id} from ${projects}
      where ${projects.deletedAt} is not null and ${projects.filesRemovedAt} is null
        and (${projects.removalLeaseUntil} is null or ${projects.removalLeaseUntil} < now())
      order by ${projects.deletedAt} limit 1
      for update skip locked)
    returning ${projects.id} as "id", ${projects.tenantId} as "tenantId", ${projects.workspacePath} as "workspacePath"`);
  return rows[0];
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
  db: { claimProjectRemoval, renewProjectRemoval, finishProjectRemoval, releaseProjectRemoval, countProjectsWithFilesLeft },
});
