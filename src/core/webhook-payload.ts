import type { RunId, SessionId } from "./ids.js";
/** The body of every delivery, as the outbox trigger stores it (drizzle/0006_webhook_outbox.sql). */
export interface WebhookPayload {
  type: string;
  /** When the event was stored, ISO 8601 UTC. */
  timestamp: string;
  data: { sessionId: SessionId; runId: RunId; seq: number; event: Record<string, unknown> };
}
