import type { Database } from "../../db/client.js";
import type { projects } from "../../db/schema.js";
import { notFound } from "../../errors.js";
import { findOwnedProject } from "../../store/owned-project.js";
import { sessionOfTenant, type SessionRow } from "../../store/sessions.js";

/** A session of this tenant, or 404: another tenant's id is indistinguishable from a missing one (D8). */
export async function findSession(db: Database, tenantId: string, id: string): Promise<SessionRow> {
  const session = await sessionOfTenant(db, tenantId, id);
  if (!session) throw notFound("session");
  return session;
}

/** A project of this tenant, or 404 (D8); a deleted project is gone. */
export async function findProject(db: Database, tenantId: string, id: string): Promise<typeof projects.$inferSelect> {
  const project = await findOwnedProject(db, tenantId, id);
  if (!project) throw notFound("project");
  return project;
}
