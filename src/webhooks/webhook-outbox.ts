import type { Store } from "../store/store.js";
import type { WebhookQueue } from "./webhook-queue.js";

/**
 * Moves deliveries from the outbox table (rows the `events` trigger inserts) to
 * the queue. Rows are claimed with `FOR UPDATE SKIP LOCKED`, so any number of
 * workers poll side by side without taking the same row (D7), and no lock is
 * held between polls.
 */
export interface OutboxContext {
  store: Store;
  queue: WebhookQueue;
}

const batchSize = 100;
/** A job in one of these states will still run; its delivery needs nothing. */
const liveJobStates = new Set(["waiting", "active", "delayed", "prioritized", "waiting-children"]);

/**
 * Claims deliveries nobody enqueued yet and enqueues them before the claim
 * commits: if the commit fails the rows are claimed again, and enqueuing the
 * same job id twice is a no-op. Answers how many were claimed.
 */
async function enqueueNewDeliveries(context: OutboxContext): Promise<number> {
  return context.store.transaction(async (tx) => {
    const claimed = await tx.webhookDeliveries.claimNewDeliveries(batchSize);
    await context.queue.enqueue(claimed.map((row) => row.id));
    return claimed.length;
  });
}

/**
 * Finds deliveries still pending long after they were enqueued and asks BullMQ
 * about their job. A job that is gone (Redis lost it), or that ended without the
 * delivery reaching a final status (the worker failed to record it), is enqueued
 * again; the attempt count in Postgres still bounds the attempts. Claiming bumps
 * `enqueued_at`, so each row is looked at by one worker per period.
 */
async function requeueStaleDeliveries(context: OutboxContext & { staleMs: number }): Promise<number> {
  const claimed = await context.store.webhookDeliveries.claimStaleDeliveries(context.staleMs, batchSize);
  let requeued = 0;
  for (const { id } of claimed) {
    if (liveJobStates.has(await context.queue.jobState(id))) continue;
    await context.queue.removeFinished(id);
    await context.queue.enqueue([id]);
    requeued++;
  }
  return requeued;
}

export interface OutboxPoller {
  stop(): Promise<void>;
}

/** Polls every `intervalMs`; looks for stale deliveries every `staleMs / 2`. Errors are reported and the loop goes on. */
export function startOutboxPoller(
  context: OutboxContext,
  options: { intervalMs: number; staleMs: number; onError(error: unknown): void; onRequeued(count: number): void },
): OutboxPoller {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let nextStaleCheck = Date.now() + options.staleMs / 2;

  const tick = async (): Promise<void> => {
    let claimed = 0;
    try {
      claimed = await enqueueNewDeliveries(context);
      if (Date.now() >= nextStaleCheck) {
        nextStaleCheck = Date.now() + options.staleMs / 2;
        const requeued = await requeueStaleDeliveries({ ...context, staleMs: options.staleMs });
        if (requeued > 0) options.onRequeued(requeued);
      }
    } catch (error) {
      options.onError(error);
    }
    if (stopped) return;
    // A full batch means a backlog: take the next one at once.
    timer = setTimeout(run, claimed >= batchSize ? 0 : options.intervalMs);
  };
  const run = () => {
    current = tick();
  };
  timer = setTimeout(run, 0);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}
