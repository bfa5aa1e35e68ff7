/** The body of every delivery, as the outbox trigger stores it (drizzle/0006_webhook_outbox.sql). */
export interface WebhookPayload {
  type: string;
  /** When the event was stored, ISO 8601 UTC. */
  timestamp: string;
  data: { sessionId: string; runId: string; seq: number; event: Record<string, unknown> };
}

/**
 * The bytes sent and signed. Stored as jsonb, the payload comes back with its
 * keys in jsonb's order, which is stable; the top level is put in the
 * documented order so a reader sees `type` first. Every attempt sends the same bytes.
 */
export function serializeWebhookPayload(payload: WebhookPayload): string {
  return JSON.stringify({ type: payload.type, timestamp: payload.timestamp, data: payload.data });
}
