import { createBlobStore } from "../blobs/create-blob-store.js";
import type { Config } from "../config.js";
import type { CheckpointReason } from "../core/checkpoint.js";
import type { Failpoints } from "../failpoints.js";
import type { Logger } from "../logger.js";
import { effectiveQuotas, readTenantSettings } from "../tenants/tenant-settings.js";
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
  store: Pick<Store, "checkpoints" | "blobs" | "tenants">;
  knownTrees: KnownTrees;
  /** Larger files are kept by size and digest only; 0: no limit (content is streamed in chunks, never read whole into memory). */
  maxFileBytes: number;
  /** The chunk length of large blobs, and the tenant's storageBytes quota that bounds what checkpoints keep. */
  config: Pick<Config, "quotas"> & { workspaces: Pick<Config["workspaces"], "blobChunkBytes"> };
  logger: Pick<Logger, "warn">;
  failpoints?: Failpoints;
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

/**
 * The blobs of the files the capture found new, each streamed from its descriptor into the blob
 * store (its digest checked on the way in); false when one changed since it was hashed. Content
 * the store holds already is not read. A file whose blob would take the tenant past its
 * storageBytes quota is kept by size and digest only (a rebuild names it in `filesNotRestored`),
 * and the checkpoint is still taken: the batch closes as always.
 */
export async function storeFreshBlobs(
  deps: CheckpointDeps,
  scope: CheckpointScope,
  captured: CapturedTree,
  signal?: AbortSignal,
): Promise<boolean> {
  const fresh = captured.fresh.filter((file) => deps.maxFileBytes === 0 || file.size <= deps.maxFileBytes);
  if (fresh.length === 0) return true;
  const blobs = createBlobStore(deps.store, deps.config, (index) => {
    if (index === 1) deps.failpoints?.hit("worker.checkpoint_blob_chunk_written");
  });
  const present = await blobs.has(
    scope.tenantId,
    fresh.map((file) => file.sha256),
  );
  const limitBytes = await storageQuota(deps, scope.tenantId);
  const overQuota: string[] = [];
  const reader = openCapturedFileReader(scope.workspaceDir, signal ? { signal } : {});
  try {
    for (const file of fresh) {
      if (present.has(file.sha256)) continue;
      const put = await blobs.put(scope.tenantId, file, reader.stream(file), { limitBytes });
      if (put.kind === "mismatch") return false;
      if (put.kind === "over_quota") overQuota.push(file.path);
    }
  } finally {
    reader.close();
  }
  if (overQuota.length > 0)
    deps.logger.warn(
      {
        tenantId: scope.tenantId,
        projectId: scope.projectId,
        runId: scope.runId,
        limitBytes,
        files: overQuota.slice(0, 20),
        count: overQuota.length,
      },
      "the checkpoint keeps these files by digest only: their content would pass the tenant's storageBytes quota",
    );
  return true;
}

async function storageQuota(deps: Pick<CheckpointDeps, "store" | "config">, tenantId: TenantId): Promise<number> {
  const settings = await readTenantSettings(deps.store, tenantId);
  return settings ? effectiveQuotas(deps.config, settings).storageBytes : deps.config.quotas.storageBytes;
}
