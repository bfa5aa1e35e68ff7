import type { projects } from "../../db/schema.js";
import { notFound } from "../../errors.js";
import type { SessionRow } from "../../store/sessions.js";
import type { Store } from "../../store/store.js";

/** A session of this tenant, or 404: another tenant's id is indistinguishable from a missing one (D8). */
export async function findSession(store: Pick<Store, "sessions">, tenantId: string, id: string): Promise<SessionRow> {
  const session = await store.sessions.sessionOfTenant(tenantId, id);
  if (!session) throw notFound("session");
  return session;
}

/** A project of this tenant, or 404 (D8); a deleted project is gone. */
export async function findProject(store: Pick<Store, "projects">, tenantId: string, id: string): Promise<typeof projects.$inferSelect> {
  const project = await store.projects.findOwnedProject(tenantId, id);
  if (!project) throw notFound("project");
  return project;
}
