import type { NewEvent, SessionEvent } from "../core/events.js";
import type { DispatchRequest } from "../core/next-job.js";
import type { TenantQuotas } from "../core/tenant-quotas.js";
import type { Config } from "../config.js";
import type { EventBus } from "../events/event-bus.js";
import type { Metrics } from "../observability/metrics.js";
import type { Dispatcher } from "../queue/dispatcher.js";
import type { Store, StoreTx } from "../store/store.js";
import { StaleWorkError, withRetry } from "../store/transact.js";
import type { RunId, SessionId, TenantId } from "../ids.js";

/**
 * A unit of work: one store transaction and what must happen once it has committed (publish its
 * events, enqueue the jobs it decided on, broadcast cancellations, count what it did). Those
 * effects never run for a transaction that rolled back, and they live here, above the store:
 * the store writes rows and answers what it appended; it knows no queue, bus or metric.
 */
export interface Effects {
  /** The transaction's repositories. */
  store: StoreTx;
  /** Appends events in the transaction and publishes them after it commits. */
  emit(tenantId: TenantId, sessionId: SessionId, events: readonly NewEvent[]): Promise<SessionEvent[]>;
  /** Publishes, after commit, events a statement of this transaction appended by itself. */
  track(events: readonly SessionEvent[]): void;
  dispatch(request: DispatchRequest): void;
  cancel(runId: RunId): void;
  /** The deployment's quotas (SPEC X5); a tenant's own overrides are read beside them where a slot is given. */
  quotas: Readonly<TenantQuotas>;
  /** Runs once the transaction has committed, never for one that rolled back: counting what it did (SPEC X8). */
  afterCommit(action: (metrics: Metrics) => void): void;
}

/** What a unit of work needs around it: the store it runs on, and where its effects go once it has committed. */
export interface UnitOfWorkDeps {
  store: Store;
  bus: EventBus;
  dispatcher: Dispatcher;
  config: Pick<Config, "quotas">;
  metrics: Metrics;
}

export interface TransactOptions {
  /** Runs after the commit, before the effects: a failpoint of the tests (`api.after_run_commit`). */
  afterCommit?: () => void;
}

export interface UnitOfWork {
  /** Runs `work` in a transaction, again after a deadlock or a serialization failure, then its effects. */
  transact<T>(work: (fx: Effects) => Promise<T>, options?: TransactOptions): Promise<T>;
  /** Like `transact`, but a fencing failure (`StaleWorkError`) rolls back and answers `null`. */
  transactFenced<T>(work: (fx: Effects) => Promise<T>, options?: TransactOptions): Promise<T | null>;
}

export function createUnitOfWork(deps: UnitOfWorkDeps): UnitOfWork {
  return {
    transact: (work, options) => runUnitOfWork(deps, work, options),
    async transactFenced(work, options) {
      try {
        return await runUnitOfWork(deps, work, options);
      } catch (error) {
        if (error instanceof StaleWorkError) return null;
        throw error;
      }
    },
  };
}

async function runUnitOfWork<T>(deps: UnitOfWorkDeps, work: (fx: Effects) => Promise<T>, options: TransactOptions = {}): Promise<T> {
  let published: SessionEvent[] = [];
  let dispatches: DispatchRequest[] = [];
  let cancels: RunId[] = [];
  let committed: Array<(metrics: Metrics) => void> = [];
  const value = await withRetry(() => {
    published = [];
    dispatches = [];
    cancels = [];
    committed = [];
    return deps.store.transaction((tx) => {
      const effects: Effects = {
        store: tx,
        async emit(tenantId, sessionId, events) {
          const stored = await tx.events.appendEvents(tenantId, sessionId, events);
          published.push(...stored);
          return stored;
        },
        track: (events) => void published.push(...events),
        dispatch: (request) => void dispatches.push(request),
        cancel: (runId) => void cancels.push(runId),
        quotas: deps.config.quotas,
        afterCommit: (action) => void committed.push(action),
      };
      return work(effects);
    });
  });
  options.afterCommit?.();
  // A count that throws (a metrics bug) must not hold back the run's job or its events: every
  // effect is tried, and the unit answers with the first failure only once all of them settled.
  const failures: unknown[] = [];
  for (const action of committed) {
    try {
      action(deps.metrics);
    } catch (error) {
      failures.push(error);
    }
  }
  // Independent of each other: clients order events by sequence number, jobs claim through Postgres.
  const sent = await Promise.allSettled([
    deps.bus.publish(published),
    ...cancels.map((runId) => deps.bus.publishCancel(runId)),
    deps.dispatcher.dispatch(dispatches),
  ]);
  for (const outcome of sent) if (outcome.status === "rejected") failures.push(outcome.reason);
  if (failures.length > 0) throw failures[0];
  return value;
}
