/**
 * Tool call state machine (SPEC D2). `running` is written before the tool starts;
 * the terminal status is written in the same transaction as the result. A call
 * found `running` by a later batch attempt was never confirmed: it becomes
 * `interrupted` and is never executed again (D3).
 *
 *   queued ──► awaiting_approval ──► queued | denied | skipped | cancelled
 *     │
 *     ├──► running ──► succeeded | failed | cancelled | interrupted
 *     └──► denied (by the gateway) | skipped | cancelled
 */
export const toolCallStatuses = [
  "queued",
  "awaiting_approval",
  "running",
  "succeeded",
  "failed",
  "denied",
  "skipped",
  "cancelled",
  "interrupted",
] as const;
export type ToolCallStatus = (typeof toolCallStatuses)[number];

export const toolCallTransitions: Readonly<Record<ToolCallStatus, readonly ToolCallStatus[]>> = {
  queued: ["awaiting_approval", "running", "denied", "skipped", "cancelled"],
  awaiting_approval: ["queued", "denied", "skipped", "cancelled"],
  running: ["succeeded", "failed", "cancelled", "interrupted"],
  succeeded: [],
  failed: [],
  denied: [],
  skipped: [],
  cancelled: [],
  interrupted: [],
};

export type TerminalToolCallStatus = "succeeded" | "failed" | "denied" | "skipped" | "cancelled" | "interrupted";

export const openToolCallStatuses = ["queued", "awaiting_approval", "running"] as const satisfies readonly ToolCallStatus[];

/** Statuses from which `to` may be reached: the WHERE clause of a guarded update. */
export function toolCallStatusesLeadingTo(to: ToolCallStatus): ToolCallStatus[] {
  return toolCallStatuses.filter((from) => toolCallTransitions[from].includes(to));
}
