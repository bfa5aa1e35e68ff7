import type { WebhookPayload } from "../core/webhook-payload.js";

/**
 * The bytes sent and signed. Stored as jsonb, the payload comes back with its
 * keys in jsonb's order, which is stable; the top level is put in the
 * documented order so a reader sees `type` first. Every attempt sends the same bytes.
 */
export function serializeWebhookPayload(payload: WebhookPayload): string {
  return JSON.stringify({ type: payload.type, timestamp: payload.timestamp, data: payload.data });
}
