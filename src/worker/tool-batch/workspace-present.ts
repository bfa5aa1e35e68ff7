import { checkWorkspace } from "../../checkpoints/check-workspace.js";
import type { ClaimedCopy } from "../../workspace/host-copies.js";
import { StaleWorkError } from "../../store/transact.js";
import { isMove, toolOwnerOf } from "../host-workspace.js";
import type { JobDeps } from "../job-deps.js";
import type { BatchAttempt } from "./batch-attempt.js";

export type WorkspacePresentDeps = Pick<
  JobDeps,
  "store" | "unitOfWork" | "knownTrees" | "tenantSettings" | "identityMode" | "logger" | "config" | "failpoints"
>;

/**
 * Phase 1b of the tool-batch job (process.ts): before any call runs, the host's copy of the
 * project's workspace (claimed for the batch's placement in phase 1a, SPEC W3) is what the store
 * says (`checkWorkspace`, SPEC W1). A folder that is gone, or damaged, is rebuilt
 * from the project's latest checkpoint and the session is told (`workspace_restored`); with no
 * checkpoint a missing folder starts empty. Answers false when the batch was taken over meanwhile.
 */
export async function ensureWorkspacePresent(deps: WorkspacePresentDeps, attempt: BatchAttempt, copy: ClaimedCopy): Promise<boolean> {
  const { run, stepRef } = attempt;
  // Owned by the tenant's tool uid when the worker can hand files over (it runs as root).
  const identity = await toolOwnerOf(deps, run.tenantId);
  const scope = {
    tenantId: run.tenantId,
    projectId: attempt.projectId,
    sessionId: run.sessionId,
    runId: run.id,
    stepIndex: stepRef.index,
    workspaceDir: attempt.workspaceDir,
    identity,
    compare: attempt.checkpoint,
    resetTo: attempt.workspaceResetTo,
    outOfBand: deps.config.workspaces.outOfBandChanges,
    moved: isMove(copy, attempt.placement.epoch),
  };
  const restored = await checkWorkspace({ ...deps, maxFileBytes: deps.config.workspaces.checkpointMaxFileBytes }, scope, attempt.signal);
  if (restored.kind !== "restored") return true;
  const { checkpoint, reason, files, differences, notRestored } = restored;
  deps.logger.warn(
    { runId: run.id, checkpointId: checkpoint.id, reason, differences },
    "the workspace folder was rebuilt from its checkpoint",
  );
  const told = await deps.unitOfWork.transactFenced(async (fx) => {
    if (!(await fx.store.runs.lockHeldRun(run))) throw new StaleWorkError();
    const filesNotRestored = notRestored.slice(0, 100);
    const body = {
      type: "workspace_restored" as const,
      reason,
      checkpointId: checkpoint.id,
      checkpointSeq: checkpoint.seq,
      files,
      filesNotRestored,
    };
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: stepRef, body }]);
    return true;
  });
  return told === true;
}
