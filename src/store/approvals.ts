import { and, eq, inArray, sql } from "drizzle-orm";
import { approvals, toolCalls } from "../db/schema.js";
import type { Effects } from "./transact.js";
import { col, run, statement, tbl, type Queryable } from "./sql-text.js";

/**
 * Closes the pending approvals of calls that will not run after all (cancel,
 * interruption, end of batch), so no approver is asked about them any more and
 * a late decision answers 409 instead of acting.
 */
export async function cancelPendingApprovals(
  fx: Effects,
  run: { id: string; tenantId: string; sessionId: string },
  toolCallIds: readonly string[],
  reason: string,
): Promise<void> {
  if (toolCallIds.length === 0) return;
  const cancelled = await fx.tx
    .update(approvals)
    .set({ status: "cancelled", reason, decidedAt: sql`now()` })
    .where(and(inArray(approvals.toolCallId, [...toolCallIds]), eq(approvals.status, "pending")))
    .returning({ id: approvals.id, toolCallId: approvals.toolCallId });
  if (cancelled.length === 0) return;
  const callIds = await fx.tx
    .select({ id: toolCalls.id, callId: toolCalls.callId })
    .from(toolCalls)
    .where(
      inArray(
        toolCalls.id,
        cancelled.map((row) => row.toolCallId),
      ),
    );
  const providerIds = new Map(callIds.map((row) => [row.id, row.callId]));
  await fx.emit(
    run.tenantId,
    run.sessionId,
    cancelled.map((row) => ({
      runId: run.id,
      step: null,
      body: {
        type: "approval_resolved" as const,
        approvalId: row.id,
        callId: providerIds.get(row.toolCallId) ?? "",
        status: "cancelled" as const,
        edited: false,
        reason,
      },
    })),
  );
}

/**
 * countPendingApprovals
 * Guard: none (a read). Params: none.
 * Result: approvals waiting for a person's decision, across every tenant (the `foya_approvals_waiting` gauge).
 */
const countPendingApprovalsStatement = statement<{ n: number }>(
  "count_pending_approvals",
  `select count(*)::int as n from ${tbl(approvals)} where ${col(approvals.status)} = 'pending'`,
);

export async function countPendingApprovals(on: Queryable): Promise<number> {
  const rows = await run(on, countPendingApprovalsStatement, []);
  return rows[0]?.n ?? 0;
}
