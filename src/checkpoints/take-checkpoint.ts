import { createBlobStore } from "../blobs/create-blob-store.js";
import type { Config } from "../config.js";
import type { CheckpointReason } from "../core/checkpoint.js";
import type { Failpoints } from "../failpoints.js";
import type { Logger } from "../logger.js";
import { effectiveQuotas, readTenantSettings } from "../tenants/tenant-settings.js";
import type { CheckpointId, ProjectId, RunId, SessionId, TenantId } from "../ids.js";
import {
  type CheckpointRow,
  fullCheckpointEvery,
  type NewCheckpoint,
  type StoredChange,
  type StoredEntry,
  type WorkSince,
} from "../store/checkpoints.js";
import type { Store, StoreTx } from "../store/store.js";
import { openCapturedFileReader } from "../workspace/checkpoint/captured-file-reader.js";
import { captureTree } from "../workspace/checkpoint/tree-capture.js";
import { diffTrees } from "../workspace/checkpoint/tree-delta.js";
import { captureChangedPaths } from "../workspace/checkpoint/tree-update.js";
import type { CapturedTree, TreeDelta } from "../workspace/checkpoint/tree-entry.js";
import type { KnownTree, KnownTrees } from "./known-trees.js";
import { changesOf, storedOf, treeOfStored } from "./stored-tree.js";
import { indexTree, type TreeIndex, updateIndex } from "./tree-digest.js";

/**
 * Taking a workspace checkpoint (SPEC W1) in two halves: `prepareCheckpoint` captures the tree
 * (from the paths the batch's calls changed when it can, else by walking the folder) and stores
 * the new content as blobs, outside any transaction (content-addressed: a blob a crashed
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

/**
 * What a batch's calls say they changed (SPEC W1). With it, and nothing else at work on the
 * project since its latest checkpoint, the checkpoint applies these paths to that tree instead of
 * walking the folder.
 */
export interface BatchChanges {
  /** Every path the calls changed (byte texts, symlinks inside resolved); null when some change is not known path by path. */
  paths: ReadonlySet<string> | null;
  /** The calls this attempt ran (tool_calls ids): their changes are `paths`. */
  ownCalls: readonly string[];
  /** Whether calls of this tool change nothing in a workspace (reads, fetches). */
  changesNothing(toolName: string): boolean;
}

export type PreparedCheckpoint =
  | {
      kind: "ready";
      header: NewCheckpoint;
      baseId: CheckpointId | null;
      changes: StoredChange[];
      captured: CapturedTree;
      index: TreeIndex;
      /** The database's clock before the capture began (`KnownTree.capturedAfter`). */
      capturedAfter: string;
      /** Deltas between the base and its full tree. */
      baseDeltas: number;
      /** Built from the calls' changed paths on the base's tree: valid on that base only. */
      fromChangedPaths: boolean;
      /**
       * Content not yet seen in the blob store (the fast path does not ask: the calls' file-change
       * records stored it): checked by the commit, stored by `storePreparedBlobs` when missing.
       */
      requiredDigests: string[];
      workspaceDir: string;
    }
  /** Not kept: the tree was too large to walk whole, or a file kept changing while it was read. */
  | { kind: "skipped"; reason: "truncated" | "changing" | "failed" };

/** The tree a checkpoint starts from, and what this process knows of it. */
export interface CheckpointBase {
  tree: CapturedTree;
  index: TreeIndex;
  deltasSinceFull: number;
  /** Held by this process since it captured it (`knownTrees`); undefined when read back from Postgres. */
  known: KnownTree | undefined;
}

/** Reads of a file that changed between its capture and its read, before the checkpoint is given up. */
const captureAttempts = 3;

export async function prepareCheckpoint(
  deps: CheckpointDeps,
  scope: CheckpointScope,
  signal?: AbortSignal,
  batch?: BatchChanges,
): Promise<PreparedCheckpoint> {
  // What happened since this process's tree of the project is asked in the same statement as which
  // checkpoint is the latest: the answer counts only if that tree is the latest's.
  const peeked = batch?.paths ? deps.knownTrees.peek(scope.projectId) : undefined;
  const known = peeked && batch ? { since: peeked.known.capturedAfter, ownCalls: batch.ownCalls } : null;
  const { latest, clock, work } = await deps.store.checkpoints.latestWithWorkSince(scope, known);
  const base = await previousTree(deps, latest);
  const since = peeked && base.known === peeked.known ? work : null;
  const fromPaths = batch && since ? await fromChangedPaths(deps, { scope, latest, base, clock, since, signal }, batch) : null;
  if (fromPaths) return fromPaths;
  for (let attempt = 0; attempt < captureAttempts; attempt++) {
    const captured = await captureTree(scope.workspaceDir, { previous: base.tree, ...(signal ? { signal } : {}) });
    if (captured.truncated) return { kind: "skipped", reason: "truncated" };
    if (!(await storeFreshBlobs(deps, scope, captured, signal))) continue;
    const delta = await diffTrees(base.tree.entries, captured.entries, signal ? { signal } : {});
    const index = updateIndex(base.index, base.tree.entries, captured.entries, delta);
    return readyCheckpoint(scope, latest?.id ?? null, captured, delta, { index, capturedAfter: clock, baseDeltas: base.deltasSinceFull });
  }
  return { kind: "skipped", reason: "changing" };
}

/**
 * The checkpoint from the calls' changed paths, or null for a walk of the whole folder: allowed only
 * when the base is this process's own capture of the project's latest checkpoint, the checkpoint
 * to write is a delta (a full one, every `fullCheckpointEvery`, walks the folder: a person's edit
 * is seen there at the latest), and nothing but this attempt's calls may have changed the folder
 * since the base was captured (no background command, no other call that is not a read, no late
 * or reverted file change). Any doubt is a walk.
 */
async function fromChangedPaths(
  deps: CheckpointDeps,
  at: {
    scope: CheckpointScope;
    latest: CheckpointRow | undefined;
    base: CheckpointBase;
    clock: string;
    /** The work since the known tree was captured (`latestWithWorkSince`). */
    since: WorkSince;
    signal: AbortSignal | undefined;
  },
  batch: BatchChanges,
): Promise<PreparedCheckpoint | null> {
  const { scope, latest, base, signal, since: work } = at;
  const { known } = base;
  if (!latest || !known || batch.paths === null || known.deltasSinceFull + 1 >= fullCheckpointEvery) return null;
  if (work.commands || work.files || !work.callNames.every((name) => batch.changesNothing(name))) return null;
  // The known tree is updated in place (cheaper than a copy), so it is this process's no longer
  // until the checkpoint commits (`rememberCheckpoint`); a commit that refuses it makes a walk,
  // which reads the latest tree back from Postgres.
  deps.knownTrees.forget(scope.projectId);
  const options = { reusePrevious: true, ...(signal ? { signal } : {}) };
  const update = await captureChangedPaths(scope.workspaceDir, known.tree, known.index.children, batch.paths, options);
  if (update.kind === "doubt") {
    deps.knownTrees.remember(scope.projectId, latest.id, known);
    return null;
  }
  const index = updateIndex(known.index, update.before, update.captured.entries, update.delta);
  return readyCheckpoint(scope, latest.id, update.captured, update.delta, {
    index,
    capturedAfter: at.clock,
    baseDeltas: known.deltasSinceFull,
    fromChangedPaths: true,
    requiredDigests: keptContent(deps, update.captured).map((file) => file.sha256),
  });
}

/** The captured files whose content a checkpoint keeps (all, unless `maxFileBytes` sets a ceiling). */
function keptContent(deps: Pick<CheckpointDeps, "maxFileBytes">, captured: CapturedTree) {
  return captured.fresh.filter((file) => deps.maxFileBytes === 0 || file.size <= deps.maxFileBytes);
}

/**
 * Stores the content a fast-path checkpoint's commit found missing (`CheckpointBlobsMissingError`);
 * false when a file changed since it was captured (the checkpoint is then taken again by a walk).
 */
export async function storePreparedBlobs(deps: CheckpointDeps, prepared: PreparedCheckpoint, signal?: AbortSignal): Promise<boolean> {
  if (prepared.kind !== "ready") return true;
  const { tenantId, projectId, sessionId, runId, stepIndex, reason } = prepared.header;
  const scope = { tenantId, projectId, sessionId, runId, stepIndex, reason, workspaceDir: prepared.workspaceDir };
  return storeFreshBlobs(deps, scope, prepared.captured, signal);
}

/** The rows a capture becomes: the header of the whole tree and the delta against `baseId`'s tree. */
export function readyCheckpoint(
  scope: CheckpointScope,
  baseId: CheckpointId | null,
  captured: CapturedTree,
  delta: TreeDelta,
  tree: { index: TreeIndex; capturedAfter: string; baseDeltas: number; fromChangedPaths?: boolean; requiredDigests?: string[] },
): PreparedCheckpoint {
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
      fileBytes: tree.index.fileBytes,
      treeDigest: tree.index.digests.get("") as string,
    },
    baseId,
    changes: changesOf(delta, captured.stamps),
    captured,
    index: tree.index,
    capturedAfter: tree.capturedAfter,
    baseDeltas: tree.baseDeltas,
    fromChangedPaths: tree.fromChangedPaths === true,
    requiredDigests: tree.requiredDigests ?? [],
    workspaceDir: scope.workspaceDir,
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
    onlyOnBase: prepared.fromChangedPaths,
    requiredDigests: prepared.requiredDigests,
  });
}

/** After the commit: the next capture of this project on this host starts from this tree. */
export function rememberCheckpoint(deps: Pick<CheckpointDeps, "knownTrees">, row: CheckpointRow, prepared: PreparedCheckpoint): void {
  if (prepared.kind !== "ready") return;
  deps.knownTrees.remember(row.projectId, row.id, {
    tree: prepared.captured,
    index: prepared.index,
    capturedAfter: prepared.capturedAfter,
    deltasSinceFull: row.baseId === null ? 0 : prepared.baseDeltas + 1,
  });
}

/** The tree of the project's latest checkpoint, with this host's stamps when it captured it last. */
export async function previousTree(
  deps: Pick<CheckpointDeps, "store" | "knownTrees">,
  latest: CheckpointRow | undefined,
): Promise<CheckpointBase> {
  if (latest === undefined) return { tree: emptyCapture(), index: indexTree(new Map()), deltasSinceFull: 0, known: undefined };
  const known = deps.knownTrees.get(latest.projectId, latest.id);
  if (known) return { tree: known.tree, index: known.index, deltasSinceFull: known.deltasSinceFull, known };
  const { entries, stamps } = treeOfStored(await deps.store.checkpoints.checkpointTree(latest.id));
  const tree: CapturedTree = { entries, stamps, fresh: [], skipped: [], hashed: 0, truncated: false };
  return { tree, index: indexTree(entries), deltasSinceFull: await deps.store.checkpoints.deltasSinceFull(latest.id), known: undefined };
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
  const fresh = keptContent(deps, captured);
  if (fresh.length === 0) return true;
  const blobs = createBlobStore(deps.store, deps.config, (index) => {
    if (index === 1) deps.failpoints?.hit("worker.checkpoint_blob_chunk_written");
  });
  const present = await blobs.has(
    scope.tenantId,
    fresh.map((file) => file.sha256),
  );
  // Most often every one is stored already: the calls' file-change records put the same content.
  const missing = fresh.filter((file) => !present.has(file.sha256));
  if (missing.length === 0) return true;
  const limitBytes = await storageQuota(deps, scope.tenantId);
  const overQuota: string[] = [];
  const reader = openCapturedFileReader(scope.workspaceDir, signal ? { signal } : {});
  try {
    for (const file of missing) {
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
