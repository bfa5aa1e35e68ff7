import { and, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { approvals, toolCalls } from "../db/schema.js";
import type { SessionEvent } from "../core/events.js";
import { appendEvents } from "./events.js";
import { clientOf, col, tbl, type Queryable } from "./sql-text.js";
import { repository } from "./repository.js";
import { run, statement } from "./named-sql.js";
import type { ApprovalId, CallId, RunId, SessionId, TenantId } from "../ids.js";

export type ApprovalRow = typeof approvals.$inferSelect;

/** The run of this tenant's approval, unlocked: what a decision locks first (SPEC X3); undefined for none. */
async function approvalRunOfTenant(tx: Database, tenantId: TenantId, approvalId: ApprovalId): Promise<{ runId: RunId } | undefined> {
  const [found] = await tx
    .select({ runId: approvals.runId })
    .from(approvals)
    .where(and(eq(approvals.id, approvalId), eq(approvals.tenantId, tenantId)));
  return found;
}

/** Locks an approval's row for its decision (SPEC D11: exactly one decision wins), after its run. */
async function lockApproval(tx: Database, approvalId: ApprovalId): Promise<ApprovalRow | undefined> {
  const [approval] = await tx.select().from(approvals).where(eq(approvals.id, approvalId)).for("update");
  return approval;
}

/** Records a decision on a locked approval (SPEC X3): status, reason, who and when, edited arguments. */
async function recordApprovalDecision(
  tx: Database,
  approvalId: ApprovalId,
  decision: Pick<ApprovalRow, "status" | "reason" | "decidedByKeyId" | "editedArguments">,
): Promise<ApprovalRow | undefined> {
  const [decided] = await tx
    .update(approvals)
    .set({
      status: decision.status,
      reason: decision.reason,
      decidedByKeyId: decision.decidedByKeyId,
      decidedAt: sql`now()`,
      editedArguments: decision.editedArguments,
    })
    .where(eq(approvals.id, approvalId))
    .returning();
  return decided;
}

/** Pending approvals past their expiry, soonest first, at most `limit` (SPEC S4: each expires and counts as denied). */
async function dueApprovals(db: Database, limit: number): Promise<Array<{ id: ApprovalId; tenant_id: TenantId }>> {
  const due = await db.execute<{ id: ApprovalId; tenant_id: TenantId }>(sql`
    select id, tenant_id from approvals where status = 'pending' and expires_at <= now() order by expires_at limit ${limit}
  `);
  return due.rows;
}

/**
 * closePendingApprovals
 * Guard: the approval is still `pending`. Result: the `approval_resolved` events appended, one per
 * approval closed. Closes the pending approvals of calls that will not run after all (cancel,
 * interruption, end of batch), so no approver is asked about them any more and a late decision
 * answers 409 instead of acting. The caller's unit of work publishes the events after commit.
 */
async function closePendingApprovals(
  tx: Database,
  run: { id: RunId; tenantId: TenantId; sessionId: SessionId },
  toolCallIds: readonly CallId[],
  reason: string,
): Promise<SessionEvent[]> {
  if (toolCallIds.length === 0) return [];
  const cancelled = await tx
    .update(approvals)
    .set({ status: "cancelled", reason, decidedAt: sql`now()` })
    .where(and(inArray(approvals.toolCallId, [...toolCallIds]), eq(approvals.status, "pending")))
    .returning({ id: approvals.id, toolCallId: approvals.toolCallId });
  if (cancelled.length === 0) return [];
  const callIds = await tx
    .select({ id: toolCalls.id, callId: toolCalls.callId })
    .from(toolCalls)
    .where(
      inArray(
        toolCalls.id,
        cancelled.map((row) => row.toolCallId),
      ),
    );
  const providerIds = new Map(callIds.map((row) => [row.id, row.callId]));
  return appendEvents(
    clientOf(tx),
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
const countPendingApprovalsStatement = statement<Record<string, never>, { n: number }>(
  "count_pending_approvals",
  `select count(*)::int as n from ${tbl(approvals)} where ${col(approvals.status)} = 'pending'`,
);

async function countPendingApprovals(on: Queryable): Promise<number> {
  const rows = await run(on, countPendingApprovalsStatement, {});
  return rows[0]?.n ?? 0;
}

/** An approval with the call it asks about: the call's provider id, tool name and raw arguments. */
export interface ApprovalWithCall {
  approval: ApprovalRow;
  callId: string;
  tool: string;
  argumentsRaw: string;
}

function selectApprovalsWithCalls(db: Database, where: SQL | undefined) {
  return db
    .select({ approval: approvals, callId: toolCalls.callId, tool: toolCalls.name, argumentsRaw: toolCalls.argumentsRaw })
    .from(approvals)
    .innerJoin(toolCalls, eq(toolCalls.id, approvals.toolCallId))
    .where(where);
}

/** This tenant's approval with its call (SPEC X3, D8); undefined for none. */
async function approvalWithCallOfTenant(db: Database, tenantId: TenantId, id: ApprovalId): Promise<ApprovalWithCall | undefined> {
  const [row] = await selectApprovalsWithCalls(db, and(eq(approvals.id, id), eq(approvals.tenantId, tenantId)));
  return row;
}

/** This tenant's approvals with their calls, newest first, at most `limit`, optionally of one status, session or run (SPEC X3). */
async function listApprovalsWithCalls(
  db: Database,
  tenantId: TenantId,
  filter: { status?: ApprovalRow["status"] | undefined; sessionId?: SessionId | undefined; runId?: RunId | undefined },
  limit: number,
): Promise<ApprovalWithCall[]> {
  const conditions = [eq(approvals.tenantId, tenantId)];
  if (filter.status) conditions.push(eq(approvals.status, filter.status));
  if (filter.sessionId) conditions.push(eq(approvals.sessionId, filter.sessionId));
  if (filter.runId) conditions.push(eq(approvals.runId, filter.runId));
  return selectApprovalsWithCalls(db, and(...conditions))
    .orderBy(desc(approvals.createdAt))
    .limit(limit);
}

/** `store.approvals`. */
export const approvalsRepository = repository({
  db: {
    approvalRunOfTenant,
    lockApproval,
    recordApprovalDecision,
    dueApprovals,
    closePendingApprovals,
    approvalWithCallOfTenant,
    listApprovalsWithCalls,
  },
  pg: { countPendingApprovals },
});
