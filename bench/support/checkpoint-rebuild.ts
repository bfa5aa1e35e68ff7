import { execFileSync } from "node:child_process";
import { renameSync } from "node:fs";
import { performance } from "node:perf_hooks";
import type pg from "pg";
import { createKnownTrees } from "../../src/checkpoints/known-trees.js";
import { restoreMissingWorkspace } from "../../src/checkpoints/restore-workspace.js";
import { treeOfStored } from "../../src/checkpoints/stored-tree.js";
import { treeDigest } from "../../src/checkpoints/tree-digest.js";
import type { CheckpointId, ProjectId, TenantId } from "../../src/ids.js";
import type { Store } from "../../src/store/store.js";
import { captureTree } from "../../src/workspace/checkpoint/tree-capture.js";
import { round } from "./stats.js";

/**
 * A lost workspace rebuilt from Postgres (SPEC W1) by `restoreMissingWorkspace`, with its reads
 * timed: the tree (one statement) and the blobs (one SELECT per batch of those asked together, see
 * src/workspace/checkpoint/blob-window.ts). Then, untimed in the figure: a full capture of the
 * result (about what the rebuild's own verify pass costs, and the proof it matches the
 * checkpoint), `cp -a` of the result (the disk's speed at that moment), and the same blobs
 * fetched again with nothing written (the store's read speed alone).
 *
 * The old folder is renamed away, not removed: this host's disk is mounted with `discard`, and a
 * removal just before slows the rebuild's writes. The bench env's cleanup removes both.
 */
export interface RebuildFigures {
  files: number;
  entries: number;
  bytes: number;
  chainDeltas: number;
  ms: number;
  treeReadMs: number;
  blobFetches: number;
  /** Estimated time the writes stood waiting for a blob (its answer came after the write loop asked for it). */
  waitedForBlobsMs: number;
  /** Every blob of the tree fetched again, as many in flight as the rebuild asks, nothing written. */
  fetchOnlyMs: number;
  fullCaptureMs: number;
  cpMs: number;
  verifiedAgainstTreeDigest: boolean;
}

/** How many blobs the rebuild asks for ahead of its writes (materialize.ts's default). */
const blobsAhead = 8;

export async function rebuildFigures(
  store: Store,
  sql: pg.Pool,
  subject: {
    tenantId: TenantId;
    projectId: ProjectId;
    root: string;
    owner: { uid: number; gid: number };
    log: (message: string) => void;
  },
): Promise<RebuildFigures> {
  const { root } = subject;
  const latest = await store.checkpoints.latestCheckpoint(subject.tenantId, subject.projectId);
  if (!latest) throw new Error("no checkpoint to rebuild from");
  const lastFull = await sql.query<{ seq: number }>(
    "select max(seq) as seq from workspace_checkpoints where project_id = $1 and base_id is null",
    [subject.projectId],
  );
  const chainDeltas = latest.seq - (lastFull.rows[0]?.seq ?? latest.seq);
  renameSync(root, `${root}-lost`);
  subject.log(
    `rebuilding ${latest.entryCount} entries (${round(latest.fileBytes / 1e6)} MB) from checkpoint ${latest.seq} (${chainDeltas} deltas on a full tree)`,
  );
  const timed = timedRestoreStore(store);
  const started = performance.now();
  const restored = await restoreMissingWorkspace(
    { store: timed.store, knownTrees: createKnownTrees() },
    { tenantId: subject.tenantId, projectId: subject.projectId, workspaceDir: root, identity: subject.owner },
  );
  const ms = performance.now() - started;
  if (restored.kind !== "restored") throw new Error(`the rebuild answered ${restored.kind}`);

  let at = performance.now();
  const rebuilt = await captureTree(root);
  const fullCaptureMs = performance.now() - at;
  const verified = treeDigest(rebuilt.entries) === latest.treeDigest;
  if (!verified) throw new Error("the rebuilt workspace does not match its checkpoint");
  at = performance.now();
  execFileSync("cp", ["-a", root, `${root}-copy`]);
  const cpMs = performance.now() - at;
  const fetchOnlyMs = await fetchEveryBlob(store, subject.tenantId, latest.id);
  return {
    files: restored.files,
    entries: latest.entryCount,
    bytes: latest.fileBytes,
    chainDeltas,
    ms: round(ms),
    treeReadMs: round(timed.treeReadMs),
    blobFetches: timed.fetches.length,
    waitedForBlobsMs: round(timed.waitedMs()),
    fetchOnlyMs: round(fetchOnlyMs),
    fullCaptureMs: round(fullCaptureMs),
    cpMs: round(cpMs),
    verifiedAgainstTreeDigest: verified,
  };
}

/**
 * The store the rebuild reads through, its reads timed. The write loop asks for blob i when it
 * starts fetching blob i + `blobsAhead` (the window refills as it hands one out), so the wait
 * for blob i is how much later than that its answer came.
 */
function timedRestoreStore(store: Store) {
  const fetches: Array<{ startedAt: number; answeredAt: number }> = [];
  const timed = {
    treeReadMs: 0,
    fetches,
    waitedMs: () => {
      let waited = 0;
      for (let i = 0; i + blobsAhead < fetches.length; i++) {
        const asked = (fetches[i + blobsAhead] as { startedAt: number }).startedAt;
        waited += Math.max(0, (fetches[i] as { answeredAt: number }).answeredAt - asked);
      }
      return waited;
    },
    store: {
      projects: store.projects,
      checkpoints: {
        ...store.checkpoints,
        checkpointTree: async (id: CheckpointId) => {
          const started = performance.now();
          const tree = await store.checkpoints.checkpointTree(id);
          timed.treeReadMs += performance.now() - started;
          return tree;
        },
      },
      blobs: {
        ...store.blobs,
        getBlobs: async (tenantId: TenantId, digests: readonly string[]) => {
          const fetch = { startedAt: performance.now(), answeredAt: 0 };
          fetches.push(fetch);
          try {
            return await store.blobs.getBlobs(tenantId, digests);
          } finally {
            fetch.answeredAt = performance.now();
          }
        },
      },
    },
  };
  return timed;
}

/** Every file blob of the checkpoint's tree, `blobsAhead` SELECTs in flight, nothing written: ms. */
async function fetchEveryBlob(store: Store, tenantId: TenantId, checkpointId: CheckpointId): Promise<number> {
  const { entries } = treeOfStored(await store.checkpoints.checkpointTree(checkpointId));
  const digests = [...entries.values()].flatMap((entry) => (entry.kind === "file" ? [entry.sha256] : []));
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    while (next < digests.length) {
      const digest = digests[next++] as string;
      if (!(await store.blobs.getBlob(tenantId, digest))) throw new Error(`blob ${digest} is missing`);
    }
  };
  await Promise.all(Array.from({ length: blobsAhead }, lane));
  return performance.now() - started;
}
