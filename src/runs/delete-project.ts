import type { TransactDeps } from "../store/transact.js";
import { markProjectDeleted } from "../store/owned-project.js";
import { liveSessionsOfProject } from "../store/sessions.js";
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
  const project = await markProjectDeleted(services.db.db, input.tenantId, input.projectId);
  if (!project) throw notFound("project");
  const live = await liveSessionsOfProject(services.db.db, input.tenantId, project.id);
  for (const session of live) await deleteSession(services, { tenantId: input.tenantId, sessionId: session.id });
  const removedEntries =
    removeTree(projectTrashRoot(services.config.workspaces.dir, project.workspacePath)) + removeTree(project.workspacePath);
  return { sessions: live.length, removedEntries };
}
