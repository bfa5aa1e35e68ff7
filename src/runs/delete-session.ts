import { requestCommandCancel, runningCommandsOfSession } from "../store/commands.js";
import { lockOpenRunsOfSession } from "../store/runs.js";
import { markSessionDeleted } from "../store/sessions.js";
import { notFound } from "../errors.js";
import { cancelRunInTransaction } from "./run-lifecycle.js";
import { transact, type TransactDeps } from "../store/transact.js";

/** Marks a session deleted, cancels its active and waiting runs and stops its background commands; history is kept for audit. */
export async function deleteSession(services: TransactDeps, input: { tenantId: string; sessionId: string }): Promise<void> {
  await transact(services, async (fx) => {
    // Runs first, then the session: the lock order every transaction follows.
    const open = await lockOpenRunsOfSession(fx.tx, input.tenantId, input.sessionId);
    const session = await markSessionDeleted(fx.tx, input.tenantId, input.sessionId);
    if (!session) throw notFound("session");
    for (const run of open) {
      await cancelRunInTransaction(fx, run, { code: "session_deleted", message: "the session was deleted" }, false);
    }
  });
  // Its background commands stop wherever they run (B3).
  const running = await runningCommandsOfSession(services.db.db, input.tenantId, input.sessionId);
  for (const command of running) await requestCommandCancel(services.db.db, services.bus, command);
}
