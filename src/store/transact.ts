import type pg from "pg";
import type { NewEvent, SessionEvent } from "../core/events.js";
import type { DispatchRequest } from "../core/next-job.js";
import type { TenantQuotas } from "../core/tenant-quotas.js";
import type { Database } from "../db/client.js";
import type { StoreTx } from "./store.js";

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

/*
 * TEMPORARY: what src/worker still uses until it takes the Store and the unit of work
 * (src/unit-of-work/unit-of-work.ts). Nothing else may: the dependency rules and
 * test/store/store-signatures.unit.test.ts keep the raw handles below out of every other folder.
 */

/**
 * A unit of work as src/worker sees it: the effects of src/unit-of-work's `Effects`, plus the
 * transaction's drizzle handle (`tx`) and connection (`pg`). Declared here, by shape, so the
 * store imports nothing above it; `afterCommit` takes what src/worker never calls it with.
 */
export interface WorkerEffects {
  tx: Database;
  pg: pg.PoolClient;
  store: StoreTx;
  emit(tenantId: string, sessionId: string, events: readonly NewEvent[]): Promise<SessionEvent[]>;
  track(events: readonly SessionEvent[]): void;
  dispatch(request: DispatchRequest): void;
  cancel(runId: string): void;
  quotas: Readonly<TenantQuotas>;
  afterCommit(action: (metrics: never) => void): void;
}

/** TEMPORARY (src/worker): its name for `WorkerEffects`. */
export type Effects = WorkerEffects;

/** TEMPORARY (src/worker): the unit of work of Services, as `transact` below reaches it. */
interface WorkerTransactDeps {
  unitOfWork: {
    transactWithHandles<T>(work: (fx: WorkerEffects) => Promise<T>, options?: { afterCommit?: () => void }): Promise<T>;
  };
}

/** TEMPORARY (src/worker): `services.unitOfWork.transact` with the raw handles. */
export function transact<T>(
  services: WorkerTransactDeps,
  work: (effects: WorkerEffects) => Promise<T>,
  options: { afterCommit?: () => void } = {},
): Promise<T> {
  return services.unitOfWork.transactWithHandles(work, options);
}

/** TEMPORARY (src/worker): like `transact`, but a fencing failure rolls back and answers `null`. */
export async function transactFenced<T>(
  services: WorkerTransactDeps,
  work: (effects: WorkerEffects) => Promise<T>,
  options: { afterCommit?: () => void } = {},
): Promise<T | null> {
  try {
    return await transact(services, work, options);
  } catch (error) {
    if (error instanceof StaleWorkError) return null;
    throw error;
  }
}
