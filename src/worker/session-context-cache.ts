import type { projects, sessions } from "../db/schema.js";
import type { Store } from "../store/store.js";
import { FoyaError } from "../errors.js";
import type { ProjectId, RunId, SessionId, TenantId } from "../ids.js";

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
 * says whether work is still wanted. A run's project never changes either.
 * Bounded: the oldest entry leaves first.
 */
export interface SessionContextCache {
  get(sessionId: SessionId): Promise<SessionContext>;
  /**
   * Whose project a run works in, read before its claim so the project's tools (MCP
   * servers may need starting) are ready without holding the run; undefined for no such run.
   */
  scopeOfRun(runId: RunId): Promise<RunScope | undefined>;
}

export interface RunScope {
  tenantId: TenantId;
  projectId: ProjectId;
  sessionId: SessionId;
}

/** Reads what it does not hold with `store.sessions`. */
export function createSessionContextCache(store: Pick<Store, "sessions">, maxEntries = 10_000): SessionContextCache {
  const entries = new Map<string, SessionContext>();
  const runScopes = new Map<string, RunScope>();
  const remember = (sessionId: SessionId, context: SessionContext) => {
    if (entries.has(sessionId)) return;
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
    entries.set(sessionId, context);
  };
  return {
    async scopeOfRun(runId) {
      const cached = runScopes.get(runId);
      if (cached) return cached;
      // The session's and project's rows come with it: the run's first step reads them next.
      const read = await store.sessions.readRunScope(runId);
      if (!read) return undefined;
      if (runScopes.size >= maxEntries) runScopes.delete(runScopes.keys().next().value as string);
      runScopes.set(runId, read.scope);
      remember(read.scope.sessionId, { session: read.session, project: read.project });
      return read.scope;
    },
    async get(sessionId) {
      const cached = entries.get(sessionId);
      if (cached) return cached;
      const row = await store.sessions.sessionWithProject(sessionId);
      if (!row) throw new FoyaError("internal", `session ${sessionId} has no project`);
      remember(sessionId, row);
      return row;
    },
  };
}
