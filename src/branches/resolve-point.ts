import type { BranchAt, HistoryPoint } from "../core/branch.js";
import { isTerminalRunStatus } from "../core/run-status.js";
import { FoyaError, notFound } from "../errors.js";
import { parseId, type RunId, type SessionId, type TenantId } from "../ids.js";
import type { PointRun } from "../store/branches.js";
import type { Store } from "../store/store.js";

/** A point a fork or a rewind can go to, checked against the session's visible history. */
export interface ResolvedPoint {
  point: HistoryPoint;
  /** The run the point lies in or after; null for the start of the session. */
  run: PointRun | null;
}

type PointReads = Pick<Store["branches"], "visibleRun" | "latestVisibleRun" | "visibleRunAt" | "visibleMessage" | "stepMessages">;

/**
 * Where `at` names in the session's history (SPEC W2). Only committed history counts: a step is
 * a point once its calls' results are all in, and a whole run once it has ended. Unknown ids,
 * and ids of another session or tenant, are not found (D8).
 */
export async function resolvePoint(
  reads: PointReads,
  scope: { tenantId: TenantId; sessionId: SessionId },
  at: Exclude<BranchAt, { branchId: unknown }>,
): Promise<ResolvedPoint> {
  if ("messageId" in at) return pointOfMessage(reads, scope, at.messageId);
  const run = "runId" in at ? await runById(reads, scope, at.runId) : await reads.latestVisibleRun(scope.tenantId, scope.sessionId);
  if (!run) throw "runId" in at ? notFound("run") : new FoyaError("conflict", "the session has no run yet");
  if (at.stepIndex === undefined) {
    if (!isTerminalRunStatus(run.status)) {
      throw new FoyaError("conflict", `run ${run.id} is still ${run.status}: name one of its finished steps, or wait for it to end`);
    }
    return { point: { runOrdinal: run.ordinal, stepIndex: null }, run };
  }
  await requireFinishedStep(reads, scope, run, at.stepIndex);
  return { point: { runOrdinal: run.ordinal, stepIndex: at.stepIndex }, run };
}

async function runById(reads: PointReads, scope: { tenantId: TenantId; sessionId: SessionId }, raw: string): Promise<PointRun | undefined> {
  const runId = parseId("run", raw);
  return runId === null ? undefined : reads.visibleRun(scope.tenantId, scope.sessionId, runId as RunId);
}

/** A user message: just before its run (the state "edit and resend" goes back to); any other: after its step. */
async function pointOfMessage(reads: PointReads, scope: { tenantId: TenantId; sessionId: SessionId }, raw: string): Promise<ResolvedPoint> {
  const messageId = parseId("msg", raw);
  const message = messageId === null ? undefined : await reads.visibleMessage(scope.tenantId, scope.sessionId, messageId);
  if (!message) throw notFound("message");
  if (message.role === "user") {
    const before = message.runOrdinal - 1;
    const run = before >= 1 ? await reads.visibleRunAt(scope.tenantId, scope.sessionId, before) : undefined;
    // Runs before it were set aside by an earlier rewind, or it is the first: the point is the start.
    return run ? { point: { runOrdinal: run.ordinal, stepIndex: null }, run } : { point: { runOrdinal: 0, stepIndex: null }, run: null };
  }
  const run = await reads.visibleRunAt(scope.tenantId, scope.sessionId, message.runOrdinal);
  if (!run) throw notFound("message");
  await requireFinishedStep(reads, scope, run, message.stepIndex);
  return { point: { runOrdinal: run.ordinal, stepIndex: message.stepIndex }, run };
}

/** A step is a point once the model's answer and a result for each of its calls are committed. */
async function requireFinishedStep(
  reads: PointReads,
  scope: { tenantId: TenantId; sessionId: SessionId },
  run: PointRun,
  stepIndex: number,
): Promise<void> {
  if (!Number.isInteger(stepIndex) || stepIndex < 0) throw new FoyaError("bad_request", "stepIndex must be a whole number, 0 or more");
  const step = await reads.stepMessages(scope.tenantId, scope.sessionId, { runOrdinal: run.ordinal, stepIndex });
  const answer = step.find((message) => message.role === "assistant");
  if (!answer) throw new FoyaError("not_found", `run ${run.id} has no step ${stepIndex} in the session's history`);
  const results = step.filter((message) => message.role === "tool").length;
  if (results < answer.toolCalls.length) {
    throw new FoyaError(
      "conflict",
      `step ${stepIndex} of run ${run.id} has not finished (its calls are still running): name an earlier step`,
    );
  }
}
