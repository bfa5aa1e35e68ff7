import { notFound } from "../errors.js";
import { deleteSession, type DeleteSessionDeps } from "./delete-session.js";
import type { ProjectId, TenantId } from "../ids.js";

/**
 * Deletes a project (SPEC F4): it answers 404 from now on, no session or run can start in it,
 * and each of its sessions is deleted (their runs cancelled, background commands stopped,
 * history kept for audit). Its workspace and its trash are removed for good afterwards, by a
 * worker (src/worker/project-removal.ts): a tree of any size is never walked here, on the
 * API's path. A call still finishing finds its workspace going and its changes go with it.
 */
export async function deleteProject(
  services: DeleteSessionDeps,
  input: { tenantId: TenantId; projectId: ProjectId },
): Promise<{ sessions: number }> {
  const project = await services.store.projects.markProjectDeleted(input.tenantId, input.projectId);
  if (!project) throw notFound("project");
  const live = await services.store.sessions.liveSessionsOfProject(input.tenantId, project.id);
  for (const session of live) await deleteSession(services, { tenantId: input.tenantId, sessionId: session.id });
  return { sessions: live.length };
}
