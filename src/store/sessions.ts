import type { SessionTask } from "../core/session.js";
import type { Database, DbExecutor } from "../db/client.js";
import { projects, runs, sessions } from "../db/schema.js";
import { eq, inArray } from "drizzle-orm";

/** Replaces a session's task list (update_tasks); the caller announces it with `tasks_updated` in the same transaction. */
export async function replaceSessionTasks(tx: Database, sessionId: string, tasks: readonly SessionTask[]): Promise<void> {
  await tx
    .update(sessions)
    .set({ tasks: [...tasks] })
    .where(eq(sessions.id, sessionId));
}

/** A session's row with its project's, or undefined for no such session. */
export async function sessionWithProject(
  db: DbExecutor,
  sessionId: string,
): Promise<{ session: typeof sessions.$inferSelect; project: typeof projects.$inferSelect } | undefined> {
  const [row] = await db
    .select({ session: sessions, project: projects })
    .from(sessions)
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .where(eq(sessions.id, sessionId));
  return row;
}

/** Whose project a run works in: its tenant, project and session; undefined for no such run. */
export async function readRunScope(
  db: DbExecutor,
  runId: string,
): Promise<{ tenantId: string; projectId: string; sessionId: string } | undefined> {
  const [row] = await db
    .select({ tenantId: runs.tenantId, projectId: sessions.projectId, sessionId: runs.sessionId })
    .from(runs)
    .innerJoin(sessions, eq(sessions.id, runs.sessionId))
    .where(eq(runs.id, runId));
  return row;
}

/** The last event sequence number of each of these sessions (the SSE streams' watch). */
export async function eventSeqOfSessions(db: DbExecutor, ids: readonly string[]): Promise<Array<{ id: string; eventSeq: number }>> {
  return db
    .select({ id: sessions.id, eventSeq: sessions.eventSeq })
    .from(sessions)
    .where(inArray(sessions.id, [...ids]));
}
