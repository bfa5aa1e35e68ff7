import { eq } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { projects, sessions } from "../db/schema.js";
import { FoyaError } from "../errors.js";

export type SessionRow = typeof sessions.$inferSelect;
export type ProjectRow = typeof projects.$inferSelect;
export interface SessionContext {
  session: SessionRow;
  project: ProjectRow;
}

/**
 * A worker's cache of session and project rows. Jobs read only the fields that
 * never change after creation (provider, model, allow-list, run mode, approval
 * mode, workspace), so an entry never goes stale for them; the run's own status
 * says whether work is still wanted. Bounded: the oldest entry leaves first.
 */
export interface SessionContextCache {
  get(tx: DbExecutor, sessionId: string): Promise<SessionContext>;
}

export function createSessionContextCache(maxEntries = 10_000): SessionContextCache {
  const entries = new Map<string, SessionContext>();
  return {
    async get(tx, sessionId) {
      const cached = entries.get(sessionId);
      if (cached) return cached;
      const [row] = await tx
        .select({ session: sessions, project: projects })
        .from(sessions)
        .innerJoin(projects, eq(projects.id, sessions.projectId))
        .where(eq(sessions.id, sessionId));
      if (!row) throw new FoyaError("internal", `session ${sessionId} has no project`);
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
      entries.set(sessionId, row);
      return row;
    },
  };
}
