import { Worker, type Job } from "bullmq";
import { createRedisConnection, type RedisConnection } from "../net/redis-connection.js";
import type { Config } from "../config.js";
import type { Store } from "../store/store.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../observability/metrics.js";
import { processWebhookJob } from "./deliver-webhook-job.js";
import { startOutboxPoller } from "./webhook-outbox.js";
import { createWebhookQueue, webhookQueueName, type WebhookJobData } from "./webhook-queue.js";

export interface WebhookDelivery {
  /** Stops polling, lets running attempts finish for up to the shutdown grace, then aborts them. */
  close(): Promise<void>;
}

/** What webhook delivery runs on: the deployment's settings, Postgres, the command connection, the log and the counters. */
export interface WebhookDeps {
  config: Config;
  store: Store;
  /** Command connection shared by queues and publishers. */
  redis: RedisConnection;
  logger: Logger;
  metrics: Metrics;
}

/** The worker side of SPEC S4: the outbox poller and the BullMQ worker that sends deliveries. */
export async function startWebhookDelivery(services: WebhookDeps): Promise<WebhookDelivery> {
  const { config, logger } = services;
  const { store } = services;
  const queue = createWebhookQueue({
    connection: services.redis,
    prefix: config.redis.queuePrefix,
    attempts: config.webhooks.attempts,
    backoffMs: config.webhooks.backoffMs,
  });
  const shutdown = new AbortController();
  const connection = createRedisConnection(config.redis);
  connection.on("error", (error) => logger.warn({ err: error }, "webhook worker redis error"));
  // Each attempt counted by outcome (SPEC X8): delivered, failed (retried or given up), or nothing to do.
  const attempt = async (job: Job<WebhookJobData>) => {
    try {
      const result = await processWebhookJob({ store, config, shutdown: shutdown.signal }, job);
      services.metrics.webhookDeliveries.inc({ outcome: result });
      return result;
    } catch (error) {
      services.metrics.webhookDeliveries.inc({ outcome: "failed" });
      throw error;
    }
  };
  const worker = new Worker<WebhookJobData>(webhookQueueName, attempt, {
    connection,
    prefix: config.redis.queuePrefix,
    concurrency: config.webhooks.concurrency,
    stalledInterval: config.workers.stalledIntervalMs,
    // Receivers dedupe by webhook-id; a stalled attempt may be sent again.
    maxStalledCount: 10,
  });
  // A receiver that fails is the receiver's problem, not this worker's: info, not warn.
  worker.on("failed", (job, error) => logger.info({ deliveryId: job?.data.deliveryId, reason: error.message }, "webhook attempt failed"));
  worker.on("error", (error) => logger.warn({ err: error }, "webhook worker error"));
  await worker.waitUntilReady();
  const poller = startOutboxPoller(
    { store, queue },
    {
      intervalMs: config.webhooks.pollMs,
      staleMs: config.webhooks.staleMs,
      onError: (error) => logger.warn({ err: error }, "webhook outbox poll failed"),
      onRequeued: (count) => logger.info({ count }, "webhook deliveries whose job was lost enqueued again"),
    },
  );

  return {
    async close() {
      await poller.stop();
      const timedOut = await Promise.race([
        worker.close().then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), config.workers.shutdownGraceMs).unref()),
      ]);
      if (timedOut) {
        // Aborted attempts are recorded as errors; the jobs come back through BullMQ's stall check.
        shutdown.abort();
        await worker.close(true);
      }
      await queue.close();
      connection.disconnect();
    },
  };
}
