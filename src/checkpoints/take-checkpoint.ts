import type { CheckpointReason } from "../core/checkpoint.js";
import type { CheckpointId, ProjectId, RunId, SessionId, TenantId } from "../ids.js";
import type { CheckpointRow, NewCheckpoint, StoredChange, StoredEntry } from "../store/checkpoints.js";
import type { Store, StoreTx } from "../store/store.js";
import { openCapturedFileReader } from "../workspace/checkpoint/captured-file-reader.js";
import { captureTree } from "../workspace/checkpoint/tree-capture.js";
import { diffTrees } from "../workspace/checkpoint/tree-delta.js";
import type { CapturedTree, TreeDelta } from "../workspace/checkpoint/tree-entry.js";
import type { KnownTrees } from "./known-trees.js";
import { changesOf, storedOf, treeDigest, treeOfStored } from "./stored-tree.js";

/**
 * Taking a workspace checkpoint (SPEC W1) in two halves: `prepareCheckpoint` walks the folder and
 * stores the new content as blobs, outside any transaction (content-addressed: a blob a crashed
 * attempt left is only a blob); `commitCheckpoint` writes the rows inside the transaction that
 * closes the batch, so a checkpoint is whole or absent and a closed batch always has one.
 */
export interface CheckpointDeps {
  store: Pick<Store, "checkpoints" | "blobs">;
  knownTrees: KnownTrees;
  /** Larger files are kept by size and digest only: their content is never read whole into memory. */
  maxFileBytes: number;
}

export interface CheckpointScope {
  tenantId: TenantId;
  projectId: ProjectId;
  sessionId: SessionId | null;
  runId: RunId | null;
  stepIndex: number | null;
  workspaceDir: string;
  reason: CheckpointReason;
}

export type PreparedCheckpoint =
  | {
      kind: "ready";
      header: NewCheckpoint;
      baseId: CheckpointId | null;
      changes: StoredChange[];
      captured: CapturedTree;
    }
  /** Not kept: the tree was too large to walk whole, or a file kept changing while it was read. */
  | { kind: "skipped"; reason: "truncated" | "changing" | "failed" };

/** Reads of a file that changed between its capture and its read, before the checkpoint is given up. */
const captureAttempts = 3;

export async function prepareCheckpoint(deps: CheckpointDeps, scope: CheckpointScope, signal?: AbortSignal): Promise<PreparedCheckpoint> {
  const latest = await deps.store.checkpoints.latestCheckpoint(scope.tenantId, scope.projectId);
  const previous = await previousTree(deps, latest);
  for (let attempt = 0; attempt < captureAttempts; attempt++) {
    const captured = await captureTree(scope.workspaceDir, { previous, ...(signal ? { signal } : {}) });
    if (captured.truncated) return { kind: "skipped", reason: "truncated" };
    if (!(await storeFreshBlobs(deps, scope, captured, signal))) continue;
    const delta = await diffTrees(previous.entries, captured.entries, signal ? { signal } : {});
    return readyCheckpoint(scope, latest?.id ?? null, captured, delta);
  }
  return { kind: "skipped", reason: "changing" };
}

/** The rows a capture becomes: the header of the whole tree and the delta against `baseId`'s tree. */
export function readyCheckpoint(
  scope: CheckpointScope,
  baseId: CheckpointId | null,
  captured: CapturedTree,
  delta: TreeDelta,
): PreparedCheckpoint {
  let fileBytes = 0;
  for (const entry of captured.entries.values()) if (entry.kind === "file") fileBytes += entry.size;
  const { tenantId, projectId, sessionId, runId, stepIndex, reason } = scope;
  return {
    kind: "ready",
    header: {
      tenantId,
      projectId,
      sessionId,
      runId,
      stepIndex,
      reason,
      entryCount: captured.entries.size,
      fileBytes,
      treeDigest: treeDigest(captured.entries),
    },
    baseId,
    changes: changesOf(delta, captured.stamps),
    captured,
  };
}

/** Inside the closing transaction. Answers the row, or null when the preparation kept nothing. */
export async function commitCheckpoint(tx: StoreTx, prepared: PreparedCheckpoint): Promise<CheckpointRow | null> {
  if (prepared.kind === "skipped") return null;
  const { captured } = prepared;
  return tx.checkpoints.insertCheckpoint(prepared.header, {
    baseId: prepared.baseId,
    changes: prepared.changes,
    whole: (): StoredEntry[] => [...captured.entries.values()].map((entry) => storedOf(entry, captured.stamps.get(entry.path))),
  });
}

/** After the commit: the next capture of this project on this host starts from this tree. */
export function rememberCheckpoint(deps: Pick<CheckpointDeps, "knownTrees">, row: CheckpointRow, prepared: PreparedCheckpoint): void {
  if (prepared.kind === "ready") deps.knownTrees.remember(row.projectId, row.id, prepared.captured);
}

/** The tree of the project's latest checkpoint, with this host's stamps when it captured it last. */
export async function previousTree(
  deps: Pick<CheckpointDeps, "store" | "knownTrees">,
  latest: CheckpointRow | undefined,
): Promise<CapturedTree> {
  if (latest === undefined) return emptyCapture();
  const known = deps.knownTrees.get(latest.projectId, latest.id);
  if (known) return known;
  const { entries, stamps } = treeOfStored(await deps.store.checkpoints.checkpointTree(latest.id));
  return { entries, stamps, fresh: [], skipped: [], hashed: 0, truncated: false };
}

function emptyCapture(): CapturedTree {
  return { entries: new Map(), stamps: new Map(), fresh: [], skipped: [], hashed: 0, truncated: false };
}

/** The blobs of the files the capture found new; false when one changed since it was hashed. */
export async function storeFreshBlobs(
  deps: CheckpointDeps,
  scope: CheckpointScope,
  captured: CapturedTree,
  signal?: AbortSignal,
): Promise<boolean> {
  if (captured.fresh.length === 0) return true;
  const reader = openCapturedFileReader(scope.workspaceDir, signal ? { signal } : {});
  try {
    for (const file of captured.fresh) {
      if (file.size > deps.maxFileBytes) continue;
      const bytes = await reader.read(file);
      if (bytes === null) return false;
      await deps.store.blobs.putBlob(scope.tenantId, bytes);
    }
    return true;
  } finally {
    reader.close();
  }
}
