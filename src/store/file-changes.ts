import { and, asc, desc, eq, gte, inArray, isNull, sql } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { fileChanges, projects, sessions } from "../db/schema.js";
import { repository } from "./repository.js";
import type { FileChangeId, ProjectId, SessionId, TenantId } from "../ids.js";

/**
 * File changes as the review API reads them and a revert reads and marks them (SPEC F3); a revert
 * holds its session's lock (D11) while it works.
 */

export type FileChangeRow = typeof fileChanges.$inferSelect;

/** The session and project of this tenant's file change, read before any lock; undefined for none (SPEC F3). */
async function fileChangeSessionOfTenant(
  db: DbExecutor,
  tenantId: TenantId,
  changeId: FileChangeId,
): Promise<{ sessionId: SessionId; projectId: ProjectId } | undefined> {
  const [owned] = await db
    .select({ sessionId: fileChanges.sessionId, projectId: sessions.projectId })
    .from(fileChanges)
    .innerJoin(sessions, eq(sessions.id, fileChanges.sessionId))
    .where(and(eq(fileChanges.id, changeId), eq(fileChanges.tenantId, tenantId)));
  return owned;
}

/** Takes the session's revert lock for the rest of this transaction: reverts of one session take turns (SPEC D11). */
async function lockSessionReverts(tx: DbExecutor, sessionId: SessionId): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`foya:revert:${sessionId}`}))`);
}

/** This tenant's file change with its project and the project's recorded workspace folder (SPEC F3); undefined for none. */
async function fileChangeWithWorkspace(
  db: DbExecutor,
  tenantId: TenantId,
  changeId: FileChangeId,
): Promise<{ change: FileChangeRow; projectId: ProjectId; workspacePath: string } | undefined> {
  const [target] = await db
    .select({ change: fileChanges, projectId: projects.id, workspacePath: projects.workspacePath })
    .from(fileChanges)
    .innerJoin(sessions, eq(sessions.id, fileChanges.sessionId))
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .where(and(eq(fileChanges.id, changeId), eq(fileChanges.tenantId, tenantId)));
  return target;
}

/** A session's unreverted file changes made at or after `since`, newest first (SPEC F3: a change and every later one). */
async function unrevertedChangesSince(db: DbExecutor, sessionId: SessionId, since: Date): Promise<FileChangeRow[]> {
  return db
    .select()
    .from(fileChanges)
    .where(and(eq(fileChanges.sessionId, sessionId), gte(fileChanges.createdAt, since), isNull(fileChanges.revertedAt)))
    .orderBy(desc(fileChanges.createdAt), desc(fileChanges.id));
}

/** Marks these file changes reverted now (SPEC F3) and answers their rows, in no particular order. */
async function markFileChangesReverted(db: DbExecutor, ids: readonly FileChangeId[]): Promise<FileChangeRow[]> {
  return db
    .update(fileChanges)
    .set({ revertedAt: sql`now()` })
    .where(inArray(fileChanges.id, [...ids]))
    .returning();
}

/** A session's file changes, oldest first (SPEC F3: the review list). */
async function fileChangesOfSession(db: DbExecutor, sessionId: SessionId): Promise<FileChangeRow[]> {
  return db.select().from(fileChanges).where(eq(fileChanges.sessionId, sessionId)).orderBy(asc(fileChanges.createdAt), asc(fileChanges.id));
}

/** This tenant's file change by id (SPEC F3, D8); undefined for none. */
async function fileChangeOfTenant(db: DbExecutor, tenantId: TenantId, id: FileChangeId): Promise<FileChangeRow | undefined> {
  const [row] = await db
    .select()
    .from(fileChanges)
    .where(and(eq(fileChanges.id, id), eq(fileChanges.tenantId, tenantId)));
  return row;
}

/** `store.fileChanges`. */
export const fileChangesRepository = repository({
  db: {
    fileChangeSessionOfTenant,
    lockSessionReverts,
    fileChangeWithWorkspace,
    unrevertedChangesSince,
    markFileChangesReverted,
    fileChangesOfSession,
    fileChangeOfTenant,
  },
});
