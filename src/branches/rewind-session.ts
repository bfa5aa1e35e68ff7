import type { BranchAt, HistoryPoint, NotUndoneCall } from "../core/branch.js";
import { FoyaError, notFound } from "../errors.js";
import { type BranchId, type CheckpointId, newId, parseId, type ProjectId, type RunId, type SessionId, type TenantId } from "../ids.js";
import type { BranchRow } from "../store/branches.js";
import type { CheckpointRow } from "../store/checkpoints.js";
import type { Effects } from "../unit-of-work/unit-of-work.js";
import { type BranchDeps, liveSessionWithProject, notUndoneAfter, notUndoneInEvents, treeTotals } from "./branch-deps.js";
import type { CaptureRewindTip, RewindTip } from "./capture-rewind-tip.js";
import { resolvePoint } from "./resolve-point.js";

export interface Rewound {
  branch: BranchRow & { runIds: RunId[] };
  /** The checkpoint the workspace returns to (a copy of the point's tree, now the project's latest). */
  checkpoint: CheckpointRow;
  /** The folder as it stood when the rewind was asked for: rewinding to `branch` comes back to it. */
  tipCheckpointId: CheckpointId | null;
  restoredBranchId: BranchId | null;
  notUndone: NotUndoneCall[];
}

/** Where a rewind goes: a point of the visible history, or back to the tip of a branch set aside before. */
interface Target {
  point: HistoryPoint;
  pointRunId: RunId | null;
  /** The tree the workspace returns to; null: empty. */
  tree: CheckpointId | null;
  restoring: BranchRow | null;
}

/**
 * Rewinds an idle session in place (SPEC W2). The folder as it stands is checkpointed first
 * (`before_rewind`, kept only when it differs from the latest checkpoint), so the rewind can be
 * undone: by the host that holds it (`captureTip`, SPEC W3), once the session is seen idle with
 * history after the point; then, in one transaction: the history after the point is set aside as
 * a branch (a named branch comes back in its place), the point's tree becomes the project's
 * latest checkpoint, the project's next batch is ordered to rebuild its folder from it, workers'
 * history copies go stale (the session's epoch), and `session_rewound` continues the event log.
 */
export async function rewindSession(
  deps: BranchDeps,
  input: { tenantId: TenantId; sessionId: SessionId; at: BranchAt; captureTip: CaptureRewindTip },
): Promise<Rewound> {
  const { session, project } = await liveSessionWithProject(deps.store, input.tenantId, input.sessionId);
  const scope = { tenantId: input.tenantId, sessionId: session.id, projectId: project.id };
  const target = await targetOf(deps, scope, input.at);
  const notUndone = await notUndoneAfter(deps, { ...scope, fullAccess: session.approvalMode === "full_access" }, target.point);
  // Refused before the host checkpoints the folder, so that a rewind refused leaves no checkpoint behind.
  await deps.unitOfWork.transact((fx) => checkRewindable(fx, scope, target));
  const captured = await input.captureTip(scope);
  const totals = await treeTotals(deps.store, input.tenantId, target.tree);
  return deps.unitOfWork.transact(async (fx) => {
    await checkRewindable(fx, scope, target);
    const tip = await tipOf(fx, scope, captured);
    const branchId = newId("brn");
    const setAside = await fx.store.branches.setAsideAfter(scope, target.point, branchId);
    if (target.restoring) await fx.store.branches.bringBack(target.restoring);
    const checkpoint = await fx.store.checkpoints.copyCheckpoint(target.tree, {
      ...scope,
      ...totals,
      runId: target.pointRunId,
      stepIndex: target.point.stepIndex,
      reason: "rewind",
    });
    await fx.store.projects.orderWorkspaceReset(input.tenantId, project.id, checkpoint.id);
    const inserted = await fx.store.branches.insertBranch({
      id: branchId,
      tenantId: input.tenantId,
      sessionId: session.id,
      at: target.point,
      tipCheckpointId: tip,
      rewoundToCheckpointId: checkpoint.id,
      messageCount: setAside.messages,
    });
    const branch = { ...inserted, runIds: setAside.runIds };
    const restoredBranchId = target.restoring?.id ?? null;
    await announce(fx, { ...scope, runId: target.pointRunId }, { branch, checkpoint, tipCheckpointId: tip, restoredBranchId, notUndone });
    return { branch, checkpoint, tipCheckpointId: tip, restoredBranchId, notUndone };
  });
}

/** The session is idle (its lock held for the rest of the transaction) and history follows the point, else 404/409. */
async function checkRewindable(fx: Effects, scope: { tenantId: TenantId; sessionId: SessionId }, target: Target): Promise<void> {
  const idle = await fx.store.branches.lockIdleSession(scope.tenantId, scope.sessionId);
  if (idle.kind === "gone") throw notFound("session");
  if (idle.kind === "busy") throw new FoyaError("conflict", `the session has an active run (${idle.runId}): rewind it once it has ended`);
  const follows = await fx.store.branches.messagesAfter(scope.tenantId, scope.sessionId, target.point);
  if (follows === 0 && target.restoring === null) throw new FoyaError("conflict", "nothing in the session's history follows that point");
}

async function targetOf(
  deps: BranchDeps,
  scope: { tenantId: TenantId; sessionId: SessionId; projectId: ProjectId },
  at: BranchAt,
): Promise<Target> {
  if ("branchId" in at) {
    const branchId = parseId("brn", at.branchId);
    const branch = branchId === null ? undefined : await deps.store.branches.branchOfSession(scope.tenantId, scope.sessionId, branchId);
    if (!branch) throw notFound("branch");
    if (branch.restoredAt !== null) throw new FoyaError("conflict", `branch ${branch.id} was already brought back`);
    const run =
      branch.at.runOrdinal >= 1 ? await deps.store.branches.visibleRunAt(scope.tenantId, scope.sessionId, branch.at.runOrdinal) : undefined;
    return { point: branch.at, pointRunId: run?.id ?? null, tree: branch.tipCheckpointId, restoring: branch };
  }
  const resolved = await resolvePoint(deps.store.branches, scope, at);
  const tree = (await deps.store.branches.checkpointAtPoint(scope, resolved.point)) ?? null;
  return { point: resolved.point, pointRunId: resolved.run?.id ?? null, tree, restoring: null };
}

/** The checkpoint of the folder as it stood: the one the host kept when it differed from the latest, else the latest. */
async function tipOf(fx: Effects, scope: { tenantId: TenantId; projectId: ProjectId }, captured: RewindTip): Promise<CheckpointId | null> {
  const latest = (await fx.store.checkpoints.latestCheckpoint(scope.tenantId, scope.projectId))?.id ?? null;
  const expected = captured.kind === "captured" ? captured.checkpointId : captured.kind === "unchanged" ? captured.baseId : latest;
  // A batch checkpointed since the capture: the capture is no longer the tip (the caller may try again).
  if (expected !== latest) throw new FoyaError("conflict", "the workspace changed while the rewind was prepared: try again");
  return latest;
}

async function announce(
  fx: Effects,
  scope: { tenantId: TenantId; sessionId: SessionId; runId: RunId | null },
  rewound: Rewound,
): Promise<void> {
  // The run the session goes on after; before the first run, the first run (events belong to a run).
  const runId = scope.runId ?? (await fx.store.branches.firstRunOfSession(scope.tenantId, scope.sessionId));
  if (!runId) return;
  const { branch, checkpoint, tipCheckpointId, restoredBranchId, notUndone } = rewound;
  const body = {
    type: "session_rewound" as const,
    branchId: branch.id,
    at: branch.at,
    checkpointId: checkpoint.id,
    tipCheckpointId,
    restoredBranchId,
    messagesSetAside: branch.messageCount,
    notUndone: notUndone.slice(0, notUndoneInEvents),
  };
  await fx.emit(scope.tenantId, scope.sessionId, [{ runId, step: null, body }]);
}
