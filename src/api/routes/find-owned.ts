import { and, eq } from "drizzle-orm";
import type { Database } from "../../db/client.js";
import { projects, sessions } from "../../db/schema.js";
import { notFound } from "../../errors.js";
import { ownedProject } from "../../store/owned-project.js";

/** A session of this tenant, or 404: another tenant's id is indistinguishable from a missing one (D8). */
export async function findSession(db: Database, tenantId: string, id: string): Promise<typeof sessions.$inferSelect> {
  const [session] = await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, id), eq(sessions.tenantId, tenantId)));
  if (!session) throw notFound("session");
  return session;
}

/** A project of this tenant, or 404 (D8); a deleted project is gone. */
export async function findProject(db: Database, tenantId: string, id: string): Promise<typeof projects.$inferSelect> {
  const [project] = await db.select().from(projects).where(ownedProject(tenantId, id));
  if (!project) throw notFound("project");
  return project;
}
