/*
 * What a transaction's work may throw to say why it gives up, and the retry around a whole
 * transaction. Transactions themselves are `store.transaction` (store.ts); their effects after
 * commit are the unit of work's (src/unit-of-work/unit-of-work.ts).
 */

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
