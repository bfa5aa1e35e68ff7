import type { runs } from "../db/schema.js";
import { FoyaError, notFound } from "../errors.js";
import type { ApprovalRow } from "../store/approvals.js";
import type { Store } from "../store/store.js";
import { resumeParkedBatch } from "../runs/resume-batch.js";
import type { Metrics } from "../observability/metrics.js";
import type { Effects, UnitOfWork } from "../unit-of-work/unit-of-work.js";
import type { ApprovalStatus } from "../core/statuses.js";
import type { ApiKeyId, ApprovalId, TenantId } from "../ids.js";

/** A decision on one approval (X3). `expire` is the policy's, taken when nobody answered in time. */
export type ApprovalDecision =
  | { kind: "approve"; reason?: string; editedArguments?: string }
  | { kind: "deny"; reason?: string }
  | { kind: "expire" };

export interface DecideInput {
  tenantId: TenantId;
  approvalId: ApprovalId;
  decision: ApprovalDecision;
  /** The API key that decided; null for the policy's own expiry. */
  keyId: ApiKeyId | null;
}

export interface DecideResult {
  approval: ApprovalRow;
}

const statusOf = { approve: "approved", deny: "denied", expire: "expired" } as const satisfies Record<
  ApprovalDecision["kind"],
  ApprovalStatus
>;

/**
 * Records a decision in one transaction, on any API instance (D6, X3): who
 * decided, when, why, and any edited arguments; moves the call to `queued`
 * (approved) or `denied` with its is_error tool message; and, when the run is
 * parked in `awaiting_approval` with no job, re-arms its batch through the
 * outbox so any worker resumes it. Locks the run first, like every writer of
 * a run, so a batch parking at the same moment sees the decision or is seen
 * by it. An approval that expired before the decision arrives is expired here
 * and the decision refused with 409.
 */
/** What deciding an approval needs: its unit of work, and the metrics that time decisions (SPEC X8). */
export interface DecideDeps {
  unitOfWork: UnitOfWork;
  metrics: Metrics;
}

export async function decideApproval(services: DecideDeps, input: DecideInput): Promise<DecideResult> {
  const outcome = await services.unitOfWork.transact(async (fx) => {
    const found = await fx.store.approvals.approvalRunOfTenant(input.tenantId, input.approvalId);
    if (!found) throw notFound("approval");
    const run = await fx.store.runs.lockRun(found.runId);
    const approval = await fx.store.approvals.lockApproval(input.approvalId);
    if (!run || !approval) throw notFound("approval");

    // Decided already, identically or not (D11): exactly one decision wins; the rest change nothing.
    if (approval.status !== "pending") return { kind: "conflict" as const, approval };
    const expired = approval.expiresAt.getTime() <= Date.now();
    const decision: ApprovalDecision = expired ? { kind: "expire" } : input.decision;
    const decided = await recordDecision(fx, run, approval, decision, expired ? null : input.keyId);
    if (expired && input.decision.kind !== "expire") return { kind: "conflict" as const, approval: decided };
    return { kind: "done" as const, result: { approval: decided } };
  });
  if (outcome.kind === "conflict") {
    const { approval } = outcome;
    const same = isSameDecision(approval, input.decision);
    throw new FoyaError(
      approval.status === "expired" ? "approval_expired" : "approval_conflict",
      approval.status === "expired"
        ? "the approval expired before a decision arrived; the call was denied"
        : same
          ? `the approval was already ${approval.status} with the same decision; nothing changed`
          : `the approval is already ${approval.status}; a different decision cannot replace it`,
      {
        current: {
          id: approval.id,
          status: approval.status,
          decidedAt: approval.decidedAt?.toISOString() ?? null,
          decidedByKeyId: approval.decidedByKeyId,
        },
      },
    );
  }
  const decided = outcome.result.approval;
  // How long a person took (or the expiry waited), SPEC X8.
  services.metrics.approvalDecisionSeconds.observe(
    { decision: decided.status },
    Math.max(0, ((decided.decidedAt ?? new Date()).getTime() - decided.createdAt.getTime()) / 1000),
  );
  return outcome.result;
}

function isSameDecision(approval: ApprovalRow, decision: ApprovalDecision): boolean {
  if (approval.status !== statusOf[decision.kind]) return false;
  return decision.kind !== "approve" || (decision.editedArguments ?? null) === approval.editedArguments;
}

async function recordDecision(
  fx: Effects,
  run: typeof runs.$inferSelect,
  approval: ApprovalRow,
  decision: ApprovalDecision,
  keyId: ApiKeyId | null,
): Promise<ApprovalRow> {
  const reason = decision.kind === "expire" ? "no decision arrived before the approval expired" : (decision.reason ?? null);
  const decided = await fx.store.approvals.recordApprovalDecision(approval.id, {
    status: statusOf[decision.kind],
    reason,
    decidedByKeyId: keyId,
    editedArguments: decision.kind === "approve" ? (decision.editedArguments ?? null) : null,
  });
  // Approved, the call goes back to `queued` for the batch to run; otherwise it is answered below.
  const call =
    decision.kind === "approve"
      ? await fx.store.toolCalls.approveCall(approval.toolCallId)
      : await fx.store.toolCalls.callAwaitingDecision(approval.toolCallId);
  if (!decided || !call) throw new FoyaError("internal", `approval ${approval.id} and its call disagree`);
  if (run.ordinal === null) throw new FoyaError("internal", `run ${run.id} has no place in history`);
  const ordered = { ...run, ordinal: run.ordinal };

  await fx.emit(run.tenantId, run.sessionId, [
    {
      runId: run.id,
      step: null,
      body: {
        type: "approval_resolved",
        approvalId: approval.id,
        callId: call.callId,
        status: decided.status as "approved" | "denied" | "expired",
        edited: decided.editedArguments !== null,
        ...(reason ? { reason } : {}),
      },
    },
  ]);
  if (decision.kind !== "approve") {
    const text =
      decision.kind === "expire"
        ? "Not run: the request for approval expired without an answer, which counts as denied."
        : `Denied by the user${reason ? `: ${reason}` : "."}`;
    const content = [{ type: "text" as const, text }];
    const errorCode = decision.kind === "expire" ? "approval_expired" : "denied";
    const answered = await fx.store.toolCalls.answerCall({
      run: ordered,
      call,
      outcome: { status: "denied", isError: true, errorCode, content },
      step: null,
    });
    if (!answered.answered) throw new FoyaError("internal", `approval ${approval.id}: its call could not be answered`);
    fx.track(answered.events);
  }
  await resumeParkedBatch(fx, run, call.stepIndex);
  return decided;
}

/** The policy's answer to approvals nobody decided in time (S4): each expires and counts as denied. */
export async function expireApprovals(services: DecideDeps & { store: Store }, limit = 100): Promise<number> {
  const due = await services.store.approvals.dueApprovals(limit);
  let expired = 0;
  for (const row of due) {
    const result = await decideApproval(services, {
      tenantId: row.tenant_id,
      approvalId: row.id,
      decision: { kind: "expire" },
      keyId: null,
    }).catch((error: unknown) => {
      if (error instanceof FoyaError) return null;
      throw error;
    });
    if (result) expired++;
  }
  return expired;
}
