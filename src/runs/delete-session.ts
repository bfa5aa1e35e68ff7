import { and, eq, inArray, sql } from "drizzle-orm";
import { activeRunStatuses } from "../core/run-status.js";
import { commands, runs, sessions } from "../db/schema.js";
import { requestCommandCancel } from "../store/commands.js";
import { notFound } from "../errors.js";
import { cancelRunInTransaction } from "./run-lifecycle.js";
import { transact, type TransactDeps } from "../store/transact.js";

/** Marks a session deleted, cancels its active and waiting runs and stops its background commands; history is kept for audit. */
export async function deleteSession(services: TransactDeps, input: { tenantId: string; sessionId: string }): Promise<void> {
  await transact(services, async (fx) => {
    // Runs first, then the session: the lock order every transaction follows.
    const open = await fx.tx
      .select()
      .from(runs)
      .where(and(eq(runs.sessionId, input.sessionId), eq(runs.tenantId, input.tenantId), inArray(runs.status, [...activeRunStatuses])))
      .for("update");
    const [session] = await fx.tx
      .update(sessions)
      .set({ deletedAt: sql`coalesce(${sessions.deletedAt}, now())` })
      .where(and(eq(sessions.id, input.sessionId), eq(sessions.tenantId, input.tenantId)))
      .returning();
    if (!session) throw notFound("session");
    for (const run of open) {
      await cancelRunInTransaction(fx, run, { code: "session_deleted", message: "the session was deleted" }, false);
    }
  });
  // Its background commands stop wherever they run (B3).
  const running = await services.db.db
    .select()
    .from(commands)
    .where(and(eq(commands.sessionId, input.sessionId), eq(commands.tenantId, input.tenantId), eq(commands.status, "running")));
  for (const command of running) await requestCommandCancel(services.db.db, services.bus, command);
}
