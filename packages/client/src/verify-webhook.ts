import { Webhook } from "standardwebhooks";
import type { FoyaEventBody } from "./events.js";

/** Event types a webhook can deliver. */
export type WebhookEventType = "approval_request" | "approval_resolved" | "run_end" | "run_status";

/** The body of a webhook delivery, narrowed by `type`. */
export type WebhookPayload = {
  [Type in WebhookEventType]: {
    type: Type;
    /** When the event was stored, ISO 8601 UTC. */
    timestamp: string;
    data: { sessionId: string; runId: string; seq: number; event: Extract<FoyaEventBody, { type: Type }> };
  };
}[WebhookEventType];

/**
 * Checks a delivery's Standard Webhooks signature (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`) with the `whsec_` secret shown when the webhook was created, and that its
 * timestamp is within five minutes; answers the parsed payload. Throws `WebhookVerificationError`
 * (from `standardwebhooks`) otherwise. `payload` must be the body exactly as received, before any
 * JSON parsing. Deliveries are retried with the same `webhook-id`: use it to drop repeats.
 */
export function verifyWebhook(payload: string, headers: Headers | Record<string, string>, secret: string): WebhookPayload {
  const plain = headers instanceof Headers ? Object.fromEntries(headers.entries()) : lowerCaseKeys(headers);
  return new Webhook(secret).verify(payload, plain) as WebhookPayload;
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
