import type { SessionTask } from "../core/session.js";
import type { Database } from "../db/client.js";
import { sessions } from "../db/schema.js";
import { eq } from "drizzle-orm";

/** Replaces a session's task list (update_tasks); the caller announces it with `tasks_updated` in the same transaction. */
export async function replaceSessionTasks(tx: Database, sessionId: string, tasks: readonly SessionTask[]): Promise<void> {
  await tx
    .update(sessions)
    .set({ tasks: [...tasks] })
    .where(eq(sessions.id, sessionId));
}
