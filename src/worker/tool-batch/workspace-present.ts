import { restoreMissingWorkspace } from "../../checkpoints/restore-workspace.js";
import { toolIdentity } from "../../sandbox/tool-identity.js";
import { StaleWorkError } from "../../store/transact.js";
import type { JobDeps } from "../job-deps.js";
import type { BatchAttempt } from "./batch-attempt.js";

export type WorkspacePresentDeps = Pick<JobDeps, "store" | "unitOfWork" | "knownTrees" | "tenantSettings" | "identityMode" | "logger">;

/**
 * Phase 1b of the tool-batch job (process.ts): before any call runs, the project's workspace is
 * there. A folder that is gone is rebuilt from the project's latest checkpoint and the session
 * is told (`workspace_restored`, SPEC W1); with no checkpoint it starts empty. Answers false when
 * the batch was taken over meanwhile.
 */
export async function ensureWorkspacePresent(deps: WorkspacePresentDeps, attempt: BatchAttempt): Promise<boolean> {
  const { run, stepRef } = attempt;
  const settings = await deps.tenantSettings.get(run.tenantId);
  // Owned by the tenant's tool uid when the worker can hand files over (it runs as root).
  const identity = process.getuid?.() === 0 ? toolIdentity(deps.identityMode, settings.toolUidSlot) : null;
  const restored = await restoreMissingWorkspace(
    deps,
    { tenantId: run.tenantId, projectId: attempt.projectId, workspaceDir: attempt.workspaceDir, identity },
    attempt.signal,
  );
  if (restored.kind !== "restored") return true;
  deps.logger.warn(
    { runId: run.id, checkpointId: restored.checkpoint.id },
    "the workspace folder was missing: rebuilt from its checkpoint",
  );
  const told = await deps.unitOfWork.transactFenced(async (fx) => {
    if (!(await fx.store.runs.lockHeldRun(run))) throw new StaleWorkError();
    const body = {
      type: "workspace_restored" as const,
      checkpointId: restored.checkpoint.id,
      checkpointSeq: restored.checkpoint.seq,
      files: restored.files,
    };
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: stepRef, body }]);
    return true;
  });
  return told === true;
}
