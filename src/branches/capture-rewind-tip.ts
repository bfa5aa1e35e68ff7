import { type CheckpointDeps, commitCheckpoint, prepareCheckpoint, rememberCheckpoint } from "../checkpoints/take-checkpoint.js";
import type { CheckpointId, ProjectId, SessionId, TenantId } from "../ids.js";
import type { Store } from "../store/store.js";
import { workspaceFolderPresent } from "../workspace/checkpoint/rebuild-folder.js";

/**
 * The folder as it stood when a rewind was asked for (SPEC W2), so that rewinding to the branch
 * comes back to it. Taken on the host that holds the project's workspace (SPEC W3), asked by the
 * API (src/hosts/); the rewind's transaction then checks that it is still the project's latest.
 */
export type RewindTip =
  /** Not read (no folder, unreadable, too large to walk, changing, or no host answered): the project's latest checkpoint is the tip. */
  | { kind: "none" }
  /** The folder is as checkpoint `baseId` (the project's latest when it was read) holds it. */
  | { kind: "unchanged"; baseId: CheckpointId | null }
  /** The folder differed from the latest checkpoint: kept as checkpoint `checkpointId` (`before_rewind`). */
  | { kind: "captured"; checkpointId: CheckpointId };

/** How a rewind has its tip taken: on the project's host, by the API's request. */
export type CaptureRewindTip = (scope: { tenantId: TenantId; sessionId: SessionId; projectId: ProjectId }) => Promise<RewindTip>;

export type CaptureRewindTipDeps = Omit<CheckpointDeps, "store" | "logger"> & {
  store: Pick<Store, "checkpoints" | "blobs" | "tenants" | "transaction">;
  logger: Pick<CheckpointDeps["logger"], "warn">;
};

/**
 * Checkpoints the folder as `before_rewind` when it differs from the project's latest checkpoint
 * (or there is none); a folder that is gone or cannot be read gives none.
 */
export async function captureRewindTip(
  deps: CaptureRewindTipDeps,
  scope: { tenantId: TenantId; sessionId: SessionId; projectId: ProjectId; workspaceDir: string },
): Promise<RewindTip> {
  if (!workspaceFolderPresent(scope.workspaceDir)) return { kind: "none" };
  let prepared: Awaited<ReturnType<typeof prepareCheckpoint>>;
  try {
    prepared = await prepareCheckpoint(deps, { ...scope, runId: null, stepIndex: null, reason: "before_rewind" });
  } catch (error) {
    deps.logger.warn(
      { err: error, projectId: scope.projectId },
      "the workspace could not be read before a rewind; its latest checkpoint is the tip",
    );
    return { kind: "none" };
  }
  if (prepared.kind !== "ready") return { kind: "none" };
  if (prepared.baseId !== null && prepared.changes.length === 0) return { kind: "unchanged", baseId: prepared.baseId };
  const row = await deps.store.transaction((tx) => commitCheckpoint(tx, prepared));
  if (!row) return { kind: "none" };
  rememberCheckpoint(deps, row, prepared);
  return { kind: "captured", checkpointId: row.id };
}
