import type { NewEvent, SessionEvent } from "../core/events.js";
import type { DbExecutor } from "../db/client.js";
import { appendEvents } from "../events/event-store.js";
import type { DispatchRequest } from "../queue/dispatcher.js";
import type { Services } from "../services.js";

/**
 * One transaction and what must happen once it has committed: publish its
 * events, enqueue the jobs it decided on, broadcast cancellations. Side effects
 * never run for a transaction that rolled back.
 */
export interface Effects {
  tx: DbExecutor;
  emit(tenantId: string, sessionId: string, events: readonly NewEvent[]): Promise<SessionEvent[]>;
  dispatch(request: DispatchRequest): void;
  cancel(runId: string): void;
}

/** Thrown inside a transaction when a fencing check fails: a newer attempt owns the work. */
export class StaleWorkError extends Error {
  constructor(message = "superseded by newer work") {
    super(message);
    this.name = "StaleWorkError";
  }
}

export async function transact<T>(
  services: Pick<Services, "db" | "bus" | "dispatcher">,
  work: (effects: Effects) => Promise<T>,
  options: { afterCommit?: () => void } = {},
): Promise<T> {
  const published: SessionEvent[] = [];
  const dispatches: DispatchRequest[] = [];
  const cancels: string[] = [];
  const value = await services.db.db.transaction(async (tx) =>
    work({
      tx,
      async emit(tenantId, sessionId, events) {
        const stored = await appendEvents(tx, tenantId, sessionId, events);
        published.push(...stored);
        return stored;
      },
      dispatch: (request) => void dispatches.push(request),
      cancel: (runId) => void cancels.push(runId),
    }),
  );
  options.afterCommit?.();
  await services.bus.publish(published);
  await Promise.all(cancels.map((runId) => services.bus.publishCancel(runId)));
  await services.dispatcher.dispatch(dispatches);
  return value;
}

/** Like `transact`, but a fencing failure rolls back and answers `null`. */
export async function transactFenced<T>(
  services: Pick<Services, "db" | "bus" | "dispatcher">,
  work: (effects: Effects) => Promise<T>,
): Promise<T | null> {
  try {
    return await transact(services, work);
  } catch (error) {
    if (error instanceof StaleWorkError) return null;
    throw error;
  }
}
