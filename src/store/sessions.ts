import type { SessionTask } from "../core/session.js";
import type { Database, DbExecutor } from "../db/client.js";
import { projects, runs, sessions, tenants } from "../db/schema.js";
import { and, desc, eq, inArray, isNull, sql } from "drizzle-orm";
import { repository } from "./repository.js";
import type { ProjectId, RunId, SessionId, TenantId } from "../ids.js";

export type SessionRow = typeof sessions.$inferSelect;

/** Replaces a session's task list (update_tasks); the caller announces it with `tasks_updated` in the same transaction. */
async function replaceSessionTasks(tx: Database, sessionId: SessionId, tasks: readonly SessionTask[]): Promise<void> {
  await tx
    .update(sessions)
    .set({ tasks: [...tasks] })
    .where(eq(sessions.id, sessionId));
}

/** A session's row with its project's, or undefined for no such session. */
async function sessionWithProject(
  db: DbExecutor,
  sessionId: SessionId,
): Promise<{ session: typeof sessions.$inferSelect; project: typeof projects.$inferSelect } | undefined> {
  const [row] = await db
    .select({ session: sessions, project: projects })
    .from(sessions)
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .where(eq(sessions.id, sessionId));
  return row;
}

/**
 * Whose project a run works in (its tenant, project and session), with its session's and
 * project's rows, in one read: a run's first job needs all of them (worker/session-context-cache.ts).
 * Undefined for no such run.
 */
async function readRunScope(
  db: DbExecutor,
  runId: RunId,
): Promise<
  | {
      scope: { tenantId: TenantId; projectId: ProjectId; sessionId: SessionId };
      session: typeof sessions.$inferSelect;
      project: typeof projects.$inferSelect;
    }
  | undefined
> {
  const [row] = await db
    .select({ tenantId: runs.tenantId, session: sessions, project: projects })
    .from(runs)
    .innerJoin(sessions, eq(sessions.id, runs.sessionId))
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .where(eq(runs.id, runId));
  if (!row) return undefined;
  return {
    scope: { tenantId: row.tenantId, projectId: row.session.projectId, sessionId: row.session.id },
    session: row.session,
    project: row.project,
  };
}

/** The last event sequence number of each of these sessions (the SSE streams' watch). */
async function eventSeqOfSessions(db: DbExecutor, ids: readonly SessionId[]): Promise<Array<{ id: SessionId; eventSeq: number }>> {
  return db
    .select({ id: sessions.id, eventSeq: sessions.eventSeq })
    .from(sessions)
    .where(inArray(sessions.id, [...ids]));
}

/** Inserts a session (a new session of the API, or a sub-agent's child session, SPEC A1) and answers its row. */
async function insertSession(tx: Database, values: typeof sessions.$inferInsert): Promise<SessionRow | undefined> {
  const [row] = await tx.insert(sessions).values(values).returning();
  return row;
}

/**
 * A live session's active run and approval mode, unlocked: what a new turn checks before it locks anything (SPEC X6).
 * A session of a deleted project is no live session: however it escaped the project's deletion, it starts no run (F4).
 */
async function peekLiveSession(
  tx: Database,
  tenantId: TenantId,
  sessionId: SessionId,
): Promise<{ activeRunId: RunId | null; approvalMode: SessionRow["approvalMode"] } | undefined> {
  const [row] = await tx
    .select({ activeRunId: sessions.activeRunId, approvalMode: sessions.approvalMode })
    .from(sessions)
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .where(and(eq(sessions.id, sessionId), eq(sessions.tenantId, tenantId), isNull(sessions.deletedAt), isNull(projects.deletedAt)));
  return row;
}

/** Locks a live (not deleted) session's row for update (SPEC X6); undefined for a missing or deleted one. */
async function lockLiveSession(tx: Database, sessionId: SessionId): Promise<SessionRow | undefined> {
  const [row] = await tx
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, sessionId), isNull(sessions.deletedAt)))
    .for("update");
  return row;
}

/** Marks this tenant's session deleted (SPEC F4), keeping the first deletion time; undefined for no such session. */
async function markSessionDeleted(tx: Database, tenantId: TenantId, sessionId: SessionId): Promise<SessionRow | undefined> {
  const [row] = await tx
    .update(sessions)
    .set({ deletedAt: sql`coalesce(${sessions.deletedAt}, now())` })
    .where(and(eq(sessions.id, sessionId), eq(sessions.tenantId, tenantId)))
    .returning();
  return row;
}

/** The ids of a project's sessions not yet deleted (SPEC F4). */
async function liveSessionsOfProject(db: DbExecutor, tenantId: TenantId, projectId: ProjectId): Promise<Array<{ id: SessionId }>> {
  return db
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(eq(sessions.projectId, projectId), eq(sessions.tenantId, tenantId), isNull(sessions.deletedAt)));
}

/** This tenant's session by id, deleted or not; undefined for another tenant's or a missing one (SPEC D8). */
async function sessionOfTenant(db: DbExecutor, tenantId: TenantId, id: SessionId): Promise<SessionRow | undefined> {
  const [session] = await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, id), eq(sessions.tenantId, tenantId)));
  return session;
}

/** This tenant's sessions not deleted, newest first, at most `limit` (SPEC D8). */
async function listLiveSessions(db: DbExecutor, tenantId: TenantId, limit: number): Promise<SessionRow[]> {
  return db
    .select()
    .from(sessions)
    .where(and(eq(sessions.tenantId, tenantId), isNull(sessions.deletedAt)))
    .orderBy(desc(sessions.createdAt), desc(sessions.id))
    .limit(limit);
}

/** What the gateway judges a session's call by (SPEC S2): its tenant, project, approval mode, workspace and both policies; undefined for no such session. */
async function sessionJudgeScope(db: DbExecutor, sessionId: SessionId) {
  const [scope] = await db
    .select({
      tenantId: sessions.tenantId,
      projectId: sessions.projectId,
      mode: sessions.approvalMode,
      workspaceDir: projects.workspacePath,
      tenantPolicy: tenants.policy,
      projectPolicy: projects.policy,
    })
    .from(sessions)
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .innerJoin(tenants, eq(tenants.id, sessions.tenantId))
    .where(eq(sessions.id, sessionId));
  return scope;
}

/** `store.sessions`. */
export const sessionsRepository = repository({
  db: {
    replaceSessionTasks,
    sessionWithProject,
    readRunScope,
    eventSeqOfSessions,
    insertSession,
    peekLiveSession,
    lockLiveSession,
    markSessionDeleted,
    liveSessionsOfProject,
    sessionOfTenant,
    listLiveSessions,
    sessionJudgeScope,
  },
});
