/**
 * Statuses of the records that have no state machine of their own in src/core
 * (runs and tool calls do: run-status.ts, tool-call-status.ts). The schema's
 * status columns hold exactly these unions.
 */

export type StepStatus = "streaming" | "completed" | "failed";

/** A background command (SPEC B1-B4); `lost` when its owner stopped renewing its lease. */
export type CommandStatus = "running" | "exited" | "failed" | "killed" | "cancelled" | "lost";

export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";
