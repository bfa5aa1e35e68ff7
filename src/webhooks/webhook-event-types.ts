import type { EventType } from "../core/events.js";

/**
 * Event types a webhook can carry (SPEC S4). The outbox trigger's WHEN clause
 * (drizzle/0006_webhook_outbox.sql) lists the same types; a test checks that.
 */
export const webhookEventTypes = ["approval_request", "approval_resolved", "run_end", "run_status"] as const satisfies readonly EventType[];

export type WebhookEventType = (typeof webhookEventTypes)[number];

/** What a subscription may name: deliverable types, or "*" for all of them. */
export const webhookSubscriptionTypes = [...webhookEventTypes, "*"] as const;
