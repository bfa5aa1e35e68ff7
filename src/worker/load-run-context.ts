import { eq } from "drizzle-orm";
import { FoyaError } from "../errors.js";
import type { DbExecutor } from "../db/client.js";
import { projects, sessions } from "../db/schema.js";

export type SessionRow = typeof sessions.$inferSelect;
export type ProjectRow = typeof projects.$inferSelect;

export async function loadSessionAndProject(tx: DbExecutor, sessionId: string): Promise<{ session: SessionRow; project: ProjectRow }> {
  const [row] = await tx
    .select({ session: sessions, project: projects })
    .from(sessions)
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .where(eq(sessions.id, sessionId));
  if (!row) throw new FoyaError("internal", `session ${sessionId} has no project`);
  return row;
}
