import { Queue, type JobsOptions } from "bullmq";
import type { RedisConnection } from "../net/redis-connection.js";
import { queueName } from "../queue/job-types.js";
import type { DeliveryId } from "../ids.js";

/** Job data carries the delivery id only; the payload and the secret stay in Postgres. */
export interface WebhookJobData {
  deliveryId: DeliveryId;
}

/** The BullMQ name of the `webhooks` queue (hash-tagged, src/queue/job-types.ts). */
export const webhookQueueName = queueName("webhooks");

export interface WebhookQueueOptions {
  connection: RedisConnection;
  prefix: string;
  attempts: number;
  backoffMs: number;
}

export interface WebhookQueue {
  readonly queue: Queue<WebhookJobData>;
  /** Enqueues one job per delivery, the job id being the delivery id: enqueuing twice is a no-op. */
  enqueue(deliveryIds: readonly DeliveryId[]): Promise<void>;
  /** BullMQ's view of a delivery's job: "waiting", "delayed", "active", "failed", "unknown", ... */
  jobState(deliveryId: DeliveryId): Promise<string>;
  /** Drops a finished job so that the same id can be enqueued again. */
  removeFinished(deliveryId: DeliveryId): Promise<void>;
  close(): Promise<void>;
}

export function createWebhookQueue(options: WebhookQueueOptions): WebhookQueue {
  const queue = new Queue<WebhookJobData>(webhookQueueName, { connection: options.connection, prefix: options.prefix });
  // Connection errors are the shared connection's, logged by its own listener (src/services.ts).
  queue.on("error", () => {});
  const jobOptions: JobsOptions = {
    attempts: options.attempts,
    // Jitter spreads the retries of many deliveries when a receiver comes back, without
    // making any delay shorter than 80 % of its exponential value.
    backoff: { type: "exponential", delay: options.backoffMs, jitter: 0.2 },
    removeOnComplete: { count: 5000 },
    removeOnFail: { count: 5000 },
  };
  return {
    queue,
    async enqueue(deliveryIds) {
      if (deliveryIds.length === 0) return;
      await queue.addBulk(
        deliveryIds.map((deliveryId) => ({ name: "deliver", data: { deliveryId }, opts: { ...jobOptions, jobId: deliveryId } })),
      );
    },
    jobState(deliveryId) {
      return queue.getJobState(deliveryId);
    },
    async removeFinished(deliveryId) {
      const state = await queue.getJobState(deliveryId);
      if (state === "completed" || state === "failed") await queue.remove(deliveryId);
    },
    close() {
      return queue.close();
    },
  };
}
