import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import {
  type BatchChanges,
  type CheckpointDeps,
  type CheckpointScope,
  commitCheckpoint,
  prepareCheckpoint,
  rememberCheckpoint,
} from "../../src/checkpoints/take-checkpoint.js";
import type { Store } from "../../src/store/store.js";
import { createWorkspaceChangeLog, observedWorkspace } from "../../src/worker/tool-batch/workspace-changes.js";
import { projectWorkspaceFiles } from "../../src/workspace/project-workspace.js";
import { percentile, round } from "./stats.js";

/**
 * What a checkpoint adds to a tool batch, by what its calls did (SPEC W1), timed as the worker
 * runs it (`prepareCheckpoint` then `commitCheckpoint` in a transaction of its own), each after a
 * one-file change:
 * - `door`: the file written through the workspace door, which notes its path: the checkpoint
 *   applies that path to this process's tree of the latest checkpoint;
 * - `layered`: the paths a foreground bash call's layer reports once applied (the file, and a new
 *   folder with a file in it, as `cp` and `mkdir -p` would leave them), applied the same way;
 * - `walk`: a batch with a background command running, whose changes no call reports: the whole
 *   folder is walked (stamps known, so only the changed file is read).
 * A full checkpoint (every 16th) walks the folder whatever the batch did: it is in the p95.
 */
export type BatchKind = "door" | "layered" | "walk";

export interface BatchKindFigures {
  p50: number;
  p95: number;
  /** Checkpoints of the series that walked the folder (every full one, and every `walk`). */
  walked: number;
  samples: number;
}

export async function timeBatchKinds(
  deps: CheckpointDeps & { store: Pick<Store, "checkpoints" | "blobs" | "transaction"> },
  scope: CheckpointScope,
  workspace: { workspacesDir: string; middleFile: string; text: (head: string) => Buffer },
  samples: number,
): Promise<Record<BatchKind, BatchKindFigures>> {
  const door = projectWorkspaceFiles(workspace.workspacesDir, scope.workspaceDir);
  let change = 0;
  const once = async (kind: BatchKind): Promise<{ ms: number; walked: boolean }> => {
    const log = createWorkspaceChangeLog();
    const content = workspace.text(`${kind} ${++change}`);
    if (kind === "door") {
      await observedWorkspace(door, log).update(workspace.middleFile, () => ({ write: content }), { maxBytes: 1 << 20 });
      // As the write tool's file-change record does in the call's own commit, before the batch settles.
      await deps.store.blobs.putBlob(scope.tenantId, content);
    } else {
      writeFileSync(path.join(scope.workspaceDir, workspace.middleFile), content);
      if (kind === "layered") {
        const folder = `bench-made-${change}`;
        mkdirSync(path.join(scope.workspaceDir, folder));
        writeFileSync(path.join(scope.workspaceDir, folder, "made.txt"), content);
        log.changed([workspace.middleFile, folder]);
        // As the layer's file-change records do when the call settles.
        await deps.store.blobs.putBlob(scope.tenantId, content);
      } else log.unknown();
    }
    const changes: BatchChanges = { paths: log.paths(), ownCalls: [], changesNothing: () => false };
    const started = performance.now();
    const prepared = await prepareCheckpoint(deps, scope, undefined, changes);
    const prepareMs = performance.now() - started;
    // The settle transaction is there anyway: what the batch pays is the checkpoint's statements in it.
    let commitMs = 0;
    const row = await deps.store.transaction(async (tx) => {
      const begun = performance.now();
      const written = await commitCheckpoint(tx, prepared);
      commitMs = performance.now() - begun;
      return written;
    });
    const ms = prepareMs + commitMs;
    if (!row || prepared.kind !== "ready") throw new Error(`a ${kind} checkpoint was not taken`);
    rememberCheckpoint(deps, row, prepared);
    return { ms, walked: !prepared.fromChangedPaths };
  };
  const figures = {} as Record<BatchKind, BatchKindFigures>;
  for (const kind of ["door", "layered", "walk"] as const) {
    await once(kind); // the first after another kind may walk: the series starts from its own tree
    const series = [];
    for (let index = 0; index < samples; index++) series.push(await once(kind));
    const times = series.map((sample) => sample.ms).sort((a, b) => a - b);
    figures[kind] = {
      p50: round(percentile(times, 50)),
      p95: round(percentile(times, 95)),
      walked: series.filter((sample) => sample.walked).length,
      samples,
    };
  }
  return figures;
}

/** Per size and kind, p50 and p95 of what the checkpoint adds to the batch, against the budgets at 10,000 files. */
export function printBatchKinds(
  figures: Record<number, Record<BatchKind, BatchKindFigures>>,
  budgets: { addedBudgetMs: number; walkBudgetMs: number },
): void {
  console.log(
    "\nWhat a checkpoint adds to a tool batch, by what its calls did (ms; prepare + its statements in the settle transaction, one file changed)",
  );
  console.log("files   kind      p50      p95   walked/samples   budget (10,000 files, p50)");
  for (const [size, kinds] of Object.entries(figures)) {
    for (const kind of ["door", "layered", "walk"] as const) {
      const figure = kinds[kind];
      const budget = kind === "walk" ? (budgets.walkBudgetMs * Number(size)) / 10_000 : budgets.addedBudgetMs;
      const verdict = Number(size) === 10_000 ? `${budget} ms: ${figure.p50 <= budget ? "within" : "OVER"}` : "";
      console.log(
        `${size.padEnd(7)} ${kind.padEnd(8)} ${String(figure.p50).padStart(6)} ${String(figure.p95).padStart(8)}   ${`${figure.walked}/${figure.samples}`.padStart(14)}   ${verdict}`,
      );
    }
  }
}
