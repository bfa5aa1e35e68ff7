import { UnrecoverableError, type Job } from "bullmq";
import type { Config } from "../config.js";
import type { Store } from "../store/store.js";
import { sendWebhook } from "./send-webhook.js";
import { serializeWebhookPayload } from "./webhook-payload.js";
import type { WebhookJobData } from "./webhook-queue.js";

export interface WebhookJobContext {
  store: Pick<Store, "webhookDeliveries">;
  config: Pick<Config, "webhooks">;
  /** Aborted when the worker stops waiting for running jobs at shutdown. */
  shutdown: AbortSignal;
}

/** How a job ended without asking BullMQ for a retry. */
export type WebhookJobResult = "delivered" | "not_pending" | "missing" | "abandoned";

/**
 * One delivery attempt: one signed POST, one `webhook_attempts` row. A non-2xx
 * answer or a network error throws, so BullMQ retries with exponential backoff;
 * when the attempts are used up the delivery is marked failed and the error is
 * unrecoverable. Postgres counts the attempts, so a job enqueued again after a
 * loss does not get a fresh allowance.
 */
export async function processWebhookJob(context: WebhookJobContext, job: Job<WebhookJobData>): Promise<WebhookJobResult> {
  const { store, config } = context;
  const delivery = await store.webhookDeliveries.loadDelivery(job.data.deliveryId);
  if (!delivery) return "missing";
  if (delivery.status !== "pending") return "not_pending";
  if (delivery.webhookDisabled) {
    await store.webhookDeliveries.abandonDelivery(delivery.id);
    return "abandoned";
  }
  const startedAt = new Date();
  const outcome = await sendWebhook({
    url: delivery.url,
    secret: delivery.secret,
    deliveryId: delivery.id,
    body: serializeWebhookPayload(delivery.payload),
    timeoutMs: config.webhooks.timeoutMs,
    allowPrivate: config.webhooks.allowPrivate,
    signal: context.shutdown,
  });
  const lastJobAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const recorded = await store.webhookDeliveries.recordAttempt({
    deliveryId: delivery.id,
    outcome,
    startedAt,
    maxAttempts: config.webhooks.attempts,
    lastJobAttempt,
  });
  if (!recorded) return "not_pending";
  if (recorded.status === "delivered") return "delivered";
  const reason = `webhook attempt ${recorded.attempt} failed: ${outcome.statusCode !== null ? `HTTP ${outcome.statusCode}` : outcome.error}`;
  throw recorded.status === "failed" ? new UnrecoverableError(reason) : new Error(reason);
}
