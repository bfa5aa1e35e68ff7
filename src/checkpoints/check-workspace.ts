import type { ProcessIdentity } from "../core/process-identity.js";
import type { CheckpointId, ProjectId, RunId, SessionId, TenantId } from "../ids.js";
import type { CheckpointRow } from "../store/checkpoints.js";
import type { Store } from "../store/store.js";
import { removeFolderAside, setWorkspaceFolderAside, workspaceFolderPresent } from "../workspace/checkpoint/rebuild-folder.js";
import { captureTree } from "../workspace/checkpoint/tree-capture.js";
import { diffTrees } from "../workspace/checkpoint/tree-delta.js";
import { restoreMissingWorkspace } from "./restore-workspace.js";
import { type CheckpointDeps, commitCheckpoint, prepareCheckpoint, previousTree, rememberCheckpoint } from "./take-checkpoint.js";

/**
 * Before a batch, the workspace is what the store says it is (SPEC W1). A missing folder is
 * rebuilt from the latest checkpoint. By default, changes made since the latest checkpoint by
 * anything but the batch's calls (a background command, a person) are simply part of the batch's
 * own checkpoint. Where the operator said nothing but Foya touches workspaces (`outOfBand:
 * "repair"`), a run's first batch that may change the workspace compares it with the checkpoint:
 * differences the project's own work explains are checkpointed first (`caught_up`); anything else
 * is damage, set aside and rebuilt.
 */
export interface CheckWorkspaceDeps extends Omit<CheckpointDeps, "store"> {
  store: Pick<Store, "checkpoints" | "blobs" | "projects" | "transaction" | "tenants">;
}

export interface CheckWorkspaceScope {
  tenantId: TenantId;
  projectId: ProjectId;
  sessionId: SessionId;
  runId: RunId;
  stepIndex: number;
  workspaceDir: string;
  identity: ProcessIdentity | null;
  /**
   * Compare a present folder with the checkpoint: for batches that may change the workspace only.
   * A batch of reads costs one `lstat` here, no query: the hot path stays as it was.
   */
  compare: boolean;
  /** Changes no tool of Foya made: kept as a checkpoint, or repaired (`FOYA_WORKSPACE_OUT_OF_BAND_CHANGES`). */
  outOfBand: "keep" | "repair";
  /** A rewind's or a fork's order (SPEC W2): the folder is rebuilt from the project's latest checkpoint, this one or later. */
  resetTo: CheckpointId | null;
  /** The project was just placed on this host (SPEC W3): a missing folder is a move, not a loss. */
  moved: boolean;
}

export type WorkspaceCheck =
  | { kind: "as_stored" }
  | { kind: "caught_up"; checkpoint: CheckpointRow }
  | {
      kind: "restored";
      reason: "missing" | "damaged" | "rewound" | "moved";
      checkpoint: CheckpointRow;
      files: number;
      differences: number;
      /** Files whose content the checkpoint did not keep (too large): left out of the rebuild. */
      notRestored: string[];
    };

export async function checkWorkspace(deps: CheckWorkspaceDeps, scope: CheckWorkspaceScope, signal?: AbortSignal): Promise<WorkspaceCheck> {
  if (scope.resetTo !== null) return resetWorkspace(deps, { ...scope, resetTo: scope.resetTo }, signal);
  if (!workspaceFolderPresent(scope.workspaceDir)) {
    const restored = await restoreMissingWorkspace(deps, scope, signal);
    return restored.kind === "restored"
      ? { ...restored, reason: scope.moved ? "moved" : "missing", differences: 0 }
      : { kind: "as_stored" };
  }
  // Kept changes need no look before the batch: its own checkpoint, taken as it closes, holds
  // them with the calls' changes (one walk of the tree per batch, not two).
  if (!scope.compare || scope.outOfBand === "keep") return { kind: "as_stored" };
  const { latest, clock } = await deps.store.checkpoints.latestCheckpointAt(scope.tenantId, scope.projectId);
  if (!latest || latest.runId === scope.runId) return { kind: "as_stored" };
  const base = await previousTree(deps, latest);
  const captured = await captureTree(scope.workspaceDir, { previous: base.tree, ...(signal ? { signal } : {}) });
  if (captured.truncated) return { kind: "as_stored" };
  const delta = await diffTrees(base.tree.entries, captured.entries, signal ? { signal } : {});
  const differences = delta.upserts.length + delta.removed.length;
  if (differences === 0) {
    // Fresh stamps for this host: the batch's own checkpoint then hashes only what its calls change.
    const { index, deltasSinceFull } = base;
    deps.knownTrees.remember(scope.projectId, latest.id, { tree: captured, index, capturedAfter: clock, deltasSinceFull });
    return { kind: "as_stored" };
  }
  if (await deps.store.checkpoints.workSince(latest, scope)) return catchUp(deps, scope, signal);
  const aside = setWorkspaceFolderAside(scope.workspaceDir);
  const restored = await restoreMissingWorkspace(deps, scope, signal);
  await removeFolderAside(aside);
  if (restored.kind !== "restored") return { kind: "as_stored" };
  return { ...restored, reason: "damaged", differences };
}

/**
 * Carries out a rewind's or a fork's order: whatever the folder holds is set aside, the tree of the
 * project's latest checkpoint (the order's, or a later one another session took since) is written
 * in its place, and the order is cleared. A worker that dies on the way leaves the order standing:
 * the next batch does it again.
 */
async function resetWorkspace(
  deps: CheckWorkspaceDeps,
  scope: CheckWorkspaceScope & { resetTo: CheckpointId },
  signal?: AbortSignal,
): Promise<WorkspaceCheck> {
  const aside = workspaceFolderPresent(scope.workspaceDir) ? setWorkspaceFolderAside(scope.workspaceDir) : null;
  const restored = await restoreMissingWorkspace(deps, scope, signal);
  if (aside) await removeFolderAside(aside);
  deps.failpoints?.hit("worker.workspace_reset_rebuilt");
  await deps.store.projects.clearWorkspaceReset(scope.tenantId, scope.projectId, scope.resetTo);
  if (restored.kind !== "restored") return { kind: "as_stored" };
  return { ...restored, reason: "rewound", differences: 0 };
}

/** The project's own work since the latest checkpoint becomes a checkpoint of its own, before the batch's calls run. */
async function catchUp(deps: CheckWorkspaceDeps, scope: CheckWorkspaceScope, signal?: AbortSignal): Promise<WorkspaceCheck> {
  const prepared = await prepareCheckpoint(deps, { ...scope, reason: "catch_up" }, signal);
  const row = await deps.store.transaction((tx) => commitCheckpoint(tx, prepared));
  if (!row) return { kind: "as_stored" };
  rememberCheckpoint(deps, row, prepared);
  return { kind: "caught_up", checkpoint: row };
}
