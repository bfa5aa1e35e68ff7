import { notFound } from "../errors.js";
import type { EventBus } from "../events/event-bus.js";
import type { Store } from "../store/store.js";
import type { UnitOfWork } from "../unit-of-work/unit-of-work.js";
import { requestCommandCancel } from "./cancel-command.js";
import { cancelRunInTransaction } from "./run-lifecycle.js";
import type { SessionId, TenantId } from "../ids.js";

/** What deleting a session needs: the store, its unit of work, and the bus that reaches the workers running its commands. */
export interface DeleteSessionDeps {
  store: Store;
  unitOfWork: UnitOfWork;
  bus: EventBus;
}

/** Marks a session deleted, cancels its active and waiting runs and stops its background commands; history is kept for audit. */
export async function deleteSession(services: DeleteSessionDeps, input: { tenantId: TenantId; sessionId: SessionId }): Promise<void> {
  await services.unitOfWork.transact(async (fx) => {
    // Runs first, then the session: the lock order every transaction follows.
    const open = await fx.store.runs.lockOpenRunsOfSession(input.tenantId, input.sessionId);
    const session = await fx.store.sessions.markSessionDeleted(input.tenantId, input.sessionId);
    if (!session) throw notFound("session");
    for (const run of open) {
      await cancelRunInTransaction(fx, run, { code: "session_deleted", message: "the session was deleted" }, false);
    }
  });
  // Its background commands stop wherever they run (B3).
  const running = await services.store.commands.runningCommandsOfSession(input.tenantId, input.sessionId);
  for (const command of running) await requestCommandCancel(services, command);
}
