import type { TenantQuotas } from "../core/tenant-quotas.js";
import type pg from "pg";
import type { NewEvent, SessionEvent } from "../core/events.js";
import type { Database } from "../db/client.js";
import { appendEvents } from "./events.js";
import type { DispatchRequest } from "../queue/dispatcher.js";
import type { Config } from "../config.js";
import { rawHandles, type Store } from "./store.js";
import type { DbHandle } from "../db/client.js";
import type { EventBus } from "../events/event-bus.js";
import type { Dispatcher } from "../queue/dispatcher.js";
import type { Metrics } from "../observability/metrics.js";

/**
 * One transaction and what must happen once it has committed: publish its
 * events, enqueue the jobs it decided on, broadcast cancellations. Side effects
 * never run for a transaction that rolled back.
 */
export interface Effects {
  /** The transaction, for drizzle queries. */
  tx: Database;
  /** The same transaction's connection, for the store's prepared statements. */
  pg: pg.PoolClient;
  emit(tenantId: string, sessionId: string, events: readonly NewEvent[]): Promise<SessionEvent[]>;
  /** Publishes, after commit, events a statement of this transaction appended by itself. */
  track(events: readonly SessionEvent[]): void;
  dispatch(request: DispatchRequest): void;
  cancel(runId: string): void;
  /** The deployment's quotas (SPEC X5); a tenant's own overrides are read beside them where a slot is given. */
  quotas: Readonly<TenantQuotas>;
  /** Runs once the transaction has committed, never for one that rolled back: counting what it did (SPEC X8). */
  afterCommit(action: (metrics: Metrics) => void): void;
}

/**
 * What a transaction needs around it: the pool it runs on, and where its events, jobs,
 * cancellations and counts go once it has committed.
 */
export interface TransactDeps {
  store: Store;
  db: DbHandle;
  bus: EventBus;
  dispatcher: Dispatcher;
  config: Config;
  metrics: Metrics;
}

/** Thrown inside a transaction when a fencing check fails: a newer attempt owns the work. */
export class StaleWorkError extends Error {
  constructor(message = "superseded by newer work") {
    super(message);
    this.name = "StaleWorkError";
  }
}

/** Thrown inside a transaction when what it read changed under it; the transaction is retried. */
export class TransientConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TransientConflictError";
  }
}

const maxAttempts = 5;

function isRetryable(error: unknown): boolean {
  if (error instanceof TransientConflictError) return true;
  // Deadlocks and serialization failures, possibly wrapped by drizzle.
  const code = (error as { code?: string; cause?: { code?: string } })?.code ?? (error as { cause?: { code?: string } })?.cause?.code;
  return code === "40P01" || code === "40001";
}

/** Runs `attempt` again after a deadlock, a serialization failure or a `TransientConflictError`. */
export async function withRetry<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (tries >= maxAttempts || !isRetryable(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, tries * 5 + Math.random() * 10));
    }
  }
}

export async function transact<T>(
  services: TransactDeps,
  work: (effects: Effects) => Promise<T>,
  options: { afterCommit?: () => void } = {},
): Promise<T> {
  let published: SessionEvent[] = [];
  let dispatches: DispatchRequest[] = [];
  let cancels: string[] = [];
  let committed: Array<(metrics: Metrics) => void> = [];
  const value = await withRetry(() => {
    published = [];
    dispatches = [];
    cancels = [];
    committed = [];
    return services.store.transaction((storeTx) => {
      const { db: tx, client } = rawHandles(storeTx);
      return work({
        tx,
        pg: client,
        async emit(tenantId, sessionId, events) {
          const stored = await appendEvents(client, tenantId, sessionId, events);
          published.push(...stored);
          return stored;
        },
        track: (events) => void published.push(...events),
        dispatch: (request) => void dispatches.push(request),
        cancel: (runId) => void cancels.push(runId),
        quotas: services.config.quotas,
        afterCommit: (action) => void committed.push(action),
      });
    });
  });
  options.afterCommit?.();
  for (const action of committed) action(services.metrics);
  // Independent of each other: clients order events by sequence number, jobs claim through Postgres.
  await Promise.all([
    services.bus.publish(published),
    ...cancels.map((runId) => services.bus.publishCancel(runId)),
    services.dispatcher.dispatch(dispatches),
  ]);
  return value;
}

/** Like `transact`, but a fencing failure rolls back and answers `null`. */
export async function transactFenced<T>(
  services: TransactDeps,
  work: (effects: Effects) => Promise<T>,
  options: { afterCommit?: () => void } = {},
): Promise<T | null> {
  try {
    return await transact(services, work, options);
  } catch (error) {
    if (error instanceof StaleWorkError) return null;
    throw error;
  }
}
