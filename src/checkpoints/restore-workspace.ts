import type { BlobStore, OpenedBlob } from "../blobs/blob-store.js";
import { createBlobReader } from "../blobs/create-blob-store.js";
import type { ProcessIdentity } from "../core/process-identity.js";
import type { ProjectId, TenantId } from "../ids.js";
import type { CheckpointRow } from "../store/checkpoints.js";
import type { Store } from "../store/store.js";
import { createEmptyWorkspaceFolder, rebuildWorkspaceFolder, workspaceFolderPresent } from "../workspace/checkpoint/rebuild-folder.js";
import type { KnownTrees } from "./known-trees.js";
import { treeOfStored } from "./stored-tree.js";
import { treeMatchesDigest } from "./tree-digest.js";
import type { TreeEntries, TreeEntry } from "../workspace/checkpoint/tree-entry.js";
import type { BlobContent } from "../workspace/checkpoint/entry-writers.js";

/**
 * A project whose workspace folder is gone (a lost disk, a new host, an operator's mistake) is
 * rebuilt from its latest checkpoint before any call of the next batch runs (SPEC W1).
 */
export interface RestoreDeps {
  store: Pick<Store, "checkpoints" | "blobs" | "projects">;
  knownTrees: KnownTrees;
}

export type Restored =
  | { kind: "present" }
  /** Missing with no checkpoint to rebuild from: made empty, as a new project's. */
  | { kind: "no_checkpoint" }
  | { kind: "project_deleted" }
  | { kind: "restored"; checkpoint: CheckpointRow; files: number; refusedLinks: number; notRestored: string[] };

class WorkspaceRestoreError extends Error {}

export async function restoreMissingWorkspace(
  deps: RestoreDeps,
  scope: { tenantId: TenantId; projectId: ProjectId; workspaceDir: string; identity: ProcessIdentity | null },
  signal?: AbortSignal,
): Promise<Restored> {
  if (workspaceFolderPresent(scope.workspaceDir)) return { kind: "present" };
  // A deleted project's folder is gone on purpose: never brought back (its calls fail as for any missing folder).
  if (!(await deps.store.projects.findOwnedProject(scope.tenantId, scope.projectId))) return { kind: "project_deleted" };
  const latest = await deps.store.checkpoints.latestCheckpoint(scope.tenantId, scope.projectId);
  if (!latest) {
    createEmptyWorkspaceFolder(scope.workspaceDir, scope.identity);
    return { kind: "no_checkpoint" };
  }
  const { entries } = treeOfStored(await deps.store.checkpoints.checkpointTree(latest.id));
  // The rows must add up to the tree that was captured: a chain read wrong is never written out.
  if (!treeMatchesDigest(entries, latest.treeDigest))
    throw new WorkspaceRestoreError(`checkpoint ${latest.id} does not add up to its tree`);
  const blobs = createBlobReader(deps.store);
  const { writable, notRestored } = await keptContent(blobs, scope.tenantId, entries);
  const owner = scope.identity ? { uid: scope.identity.uid, gid: scope.identity.gid } : {};
  const rebuilt = await rebuildWorkspaceFolder(scope.workspaceDir, writable, {
    blob: coalescedBlobs((digests) => blobs.open(scope.tenantId, digests)),
    blobsAhead: blobsInFlight,
    ...owner,
    ...(signal ? { signal } : {}),
  });
  if (rebuilt.kind === "failed") throw new WorkspaceRestoreError(`rebuilding the workspace from ${latest.id} failed: ${rebuilt.message}`);
  if (rebuilt.kind === "already_present") return { kind: "present" };
  // The rebuilt files have new inodes and times: the next capture hashes them once.
  deps.knownTrees.forget(scope.projectId);
  return { kind: "restored", checkpoint: latest, files: rebuilt.files, refusedLinks: rebuilt.refusedLinks, notRestored };
}

/**
 * The tree without the files whose content the store does not hold (past the tenant's
 * storageBytes quota, or past `FOYA_CHECKPOINT_MAX_FILE_BYTES`, when they were checkpointed):
 * the rebuild writes everything else and names what it left out, rather than failing whole.
 */
async function keptContent(
  blobs: Pick<BlobStore, "has">,
  tenantId: TenantId,
  entries: TreeEntries,
): Promise<{ writable: TreeEntries; notRestored: string[] }> {
  const digests = [...entries.values()].flatMap((entry) => (entry.kind === "file" && entry.size > 0 ? [entry.sha256] : []));
  const stored = await blobs.has(tenantId, digests);
  const notRestored: string[] = [];
  const writable = new Map<string, TreeEntry>();
  for (const [path, entry] of entries) {
    if (entry.kind === "file" && entry.size > 0 && !stored.has(entry.sha256)) notRestored.push(path);
    else writable.set(path, entry);
  }
  return { writable, notRestored };
}

/** Blobs asked for ahead of the writes; those asked in one turn of the event loop go in one query. */
const blobsInFlight = 32;

/** A small blob comes whole with the answer; a chunked one as a stream, read when its file is written. */
function coalescedBlobs(
  fetch: (digests: readonly string[]) => Promise<Map<string, OpenedBlob>>,
): (sha256: string) => Promise<BlobContent | null> {
  let batch: Array<{ sha256: string; resolve: (blob: BlobContent | null) => void; reject: (error: unknown) => void }> = [];
  const flush = async () => {
    const asked = batch;
    batch = [];
    try {
      const found = await fetch(asked.map((request) => request.sha256));
      for (const request of asked) {
        const opened = found.get(request.sha256);
        request.resolve(opened ? (opened.bytes ?? opened) : null);
      }
    } catch (error) {
      for (const request of asked) request.reject(error);
    }
  };
  return (sha256) =>
    new Promise((resolve, reject) => {
      if (batch.length === 0) queueMicrotask(() => void flush());
      batch.push({ sha256, resolve, reject });
    });
}
