import { closeSync, constants, lstatSync, openSync, readdirSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import {
  type CheckpointDeps,
  type CheckpointScope,
  commitCheckpoint,
  type PreparedCheckpoint,
  previousTree,
  readyCheckpoint,
  storeFreshBlobs,
} from "../../src/checkpoints/take-checkpoint.js";
import { updateIndex } from "../../src/checkpoints/tree-digest.js";
import type { CheckpointRow } from "../../src/store/checkpoints.js";
import type { Store } from "../../src/store/store.js";
import { captureTree } from "../../src/workspace/checkpoint/tree-capture.js";
import { O_PATH } from "../../src/workspace/descriptor-walk.js";
import { diffTrees } from "../../src/workspace/checkpoint/tree-delta.js";

/**
 * Where a checkpoint's time goes: the steps of `prepareCheckpoint` (src/checkpoints/take-checkpoint.ts)
 * called one by one, in its order and with its arguments, each timed, then `commitCheckpoint` in a
 * transaction of its own. The bench times the real functions for its totals; this only says which
 * step dominates. It keeps to the one-attempt path (a file changing during the capture throws here).
 */
export interface CheckpointPhases {
  /** The project's latest checkpoint row. */
  latestMs: number;
  /** The previous tree: the in-process cache (warm) or the checkpoint's chain read from Postgres (cold). */
  previousTreeMs: number;
  /** captureTree: one `find` listing of the tree (a descriptor walk below 1,000 entries), the changed files hashed. */
  captureMs: number;
  /** The changed files read again and put as blobs, one INSERT each. */
  blobsMs: number;
  /** diffTrees against the previous tree. */
  deltaMs: number;
  /** The tree digest's folders above the changed entries digested again, and the delta as rows. */
  digestMs: number;
  /** commitCheckpoint in its own transaction: lock, latest, chain length, the rows. */
  commitMs: number;
  totalMs: number;
  hashed: number;
  full: boolean;
}

export async function timedCheckpointPhases(
  deps: CheckpointDeps & { store: Pick<Store, "checkpoints" | "blobs" | "transaction"> },
  scope: CheckpointScope,
): Promise<{ phases: CheckpointPhases; row: CheckpointRow; prepared: PreparedCheckpoint }> {
  let lapAt = performance.now();
  const started = lapAt;
  const lap = () => {
    const now = performance.now();
    const ms = now - lapAt;
    lapAt = now;
    return ms;
  };
  const { latest, clock } = await deps.store.checkpoints.latestCheckpointAt(scope.tenantId, scope.projectId);
  if (!latest) throw new Error("the phases are timed on a project that has a checkpoint already");
  const latestMs = lap();
  const base = await previousTree(deps, latest);
  const previous = base.tree;
  const previousTreeMs = lap();
  const captured = await captureTree(scope.workspaceDir, { previous });
  const captureMs = lap();
  if (!(await storeFreshBlobs(deps, scope, captured))) throw new Error("a file changed while its checkpoint was taken");
  const blobsMs = lap();
  const delta = await diffTrees(previous.entries, captured.entries);
  const deltaMs = lap();
  const index = updateIndex(base.index, previous.entries, captured.entries, delta);
  const prepared = readyCheckpoint(scope, latest.id, captured, delta, { index, capturedAfter: clock, baseDeltas: base.deltasSinceFull });
  const digestMs = lap();
  const row = await deps.store.transaction((tx) => commitCheckpoint(tx, prepared));
  if (!row) throw new Error("a ready checkpoint committed no row");
  const commitMs = lap();
  return {
    phases: {
      latestMs,
      previousTreeMs,
      captureMs,
      blobsMs,
      deltaMs,
      digestMs,
      commitMs,
      totalMs: performance.now() - started,
      hashed: captured.hashed,
      full: row.baseId === null,
    },
    row,
    prepared,
  };
}

/** The floor under any whole-tree capture: readdir and lstat of every entry by path, nothing kept. */
export function lstatWalk(at: string): number {
  let count = 0;
  for (const name of readdirSync(at)) {
    const inner = path.join(at, name);
    count++;
    if (lstatSync(inner).isDirectory()) count += lstatWalk(inner);
  }
  return count;
}

/**
 * The same walk the way the capture reaches entries (SPEC S6): each folder held by an `O_PATH`
 * descriptor, every name listed and lstat'ed through `/proc/self/fd/<fd>/<name>`, with bigint
 * stats; nothing kept, nothing hashed.
 */
export function descriptorLstatWalk(at: string | number): number {
  const fd = typeof at === "number" ? at : openSync(at, O_PATH | constants.O_DIRECTORY);
  let count = 0;
  try {
    for (const name of readdirSync(`/proc/self/fd/${fd}`)) {
      count++;
      const stats = lstatSync(`/proc/self/fd/${fd}/${name}`, { bigint: true });
      if (stats.isDirectory())
        count += descriptorLstatWalk(openSync(`/proc/self/fd/${fd}/${name}`, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW));
    }
  } finally {
    closeSync(fd);
  }
  return count;
}
