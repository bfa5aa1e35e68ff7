import type { TransactDeps } from "../store/transact.js";
import { and, eq, isNull, sql } from "drizzle-orm";
import { ownedProject } from "../store/owned-project.js";
import { projects, sessions } from "../db/schema.js";
import { notFound } from "../errors.js";
import { projectTrashRoot } from "../workspace/project-trash.js";
import { removeTree } from "../workspace/remove-tree.js";
import { deleteSession } from "./delete-session.js";

/**
 * Deletes a project (SPEC F4): it answers 404 from now on, each of its sessions
 * is deleted (their runs cancelled, background commands stopped, history kept
 * for audit), and its workspace and its trash are removed for good. Files go
 * last, after every run was told to stop; a call still finishing finds its
 * workspace gone and its changes are dropped with it.
 */
export async function deleteProject(
  services: TransactDeps,
  input: { tenantId: string; projectId: string },
): Promise<{ sessions: number; removedEntries: number }> {
  const [project] = await services.db.db
    .update(projects)
    .set({ deletedAt: sql`now()` })
    .where(ownedProject(input.tenantId, input.projectId))
    .returning();
  if (!project) throw notFound("project");
  const live = await services.db.db
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(eq(sessions.projectId, project.id), eq(sessions.tenantId, input.tenantId), isNull(sessions.deletedAt)));
  for (const session of live) await deleteSession(services, { tenantId: input.tenantId, sessionId: session.id });
  const removedEntries =
    removeTree(projectTrashRoot(services.config.workspaces.dir, project.workspacePath)) + removeTree(project.workspacePath);
  return { sessions: live.length, removedEntries };
}
