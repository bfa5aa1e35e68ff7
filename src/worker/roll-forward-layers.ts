import type { JobDeps } from "./job-deps.js";
import { removeLayerFolder, type FoundLayer } from "../sandbox/overlay/call-layers.js";
import { settleLayer } from "../tools/shell/settle-layer.js";
import { setLayerAside } from "../sandbox/overlay/set-layer-aside.js";

type LayerServices = Pick<JobDeps, "callLayers" | "config" | "store" | "logger">;

/**
 * Settles the layers of calls that will never settle their own (SPEC X7, D3):
 * their worker died mid-command, or gave the layer up. What the interrupted
 * command wrote is recorded as file changes of its call (which recovery marks
 * `interrupted`, never run again) and applied to the workspace where nothing
 * changed since (`upper-changes.ts`); the rest is recorded as not applied. A
 * layer its call had applied already (killed before its result was stored)
 * only has its journaled records stored, once (`layer-journal.ts`).
 * Never discarded: those writes may be all that is left of the call.
 *
 * Order: a project's next tool batch settles its layers before any of its
 * calls runs (`settleProjectLayers`), so a late layer never lands over the
 * later calls' work; the sweeper and a worker's start settle the layers of
 * projects that have no next batch.
 */

/** How often a layer may fail to settle before it is set aside whole in the project's trash, so its project is not held forever. */
const maxSettleAttempts = 5;

/** Settles every orphaned layer of this host; answers how many were settled. */
export async function rollForwardLayers(services: LayerServices): Promise<number> {
  if (!services.callLayers.ok) return 0;
  let settled = 0;
  for (const orphan of services.callLayers.layers.orphans()) if ((await settleOrphan(services, orphan)) === "settled") settled++;
  return settled;
}

export type ProjectLayers = { kind: "clear" } | { kind: "wait"; retryInMs: number; reason: string };

/**
 * Before a batch of a project runs anything: settles the project's orphaned
 * layers in the order their calls ran. Answers `wait` when another worker is
 * settling one now, or one could not be settled yet: the batch then waits
 * (without holding a worker slot) rather than run over it. Layers whose calls
 * still run in a live process are their own calls' to settle.
 */
export async function settleProjectLayers(services: LayerServices, workspaceDir: string): Promise<ProjectLayers> {
  if (!services.callLayers.ok) return { kind: "clear" };
  for (const layer of services.callLayers.layers.ofWorkspace(workspaceDir)) {
    if (layer.state === "running") continue;
    if (layer.state === "settling")
      return { kind: "wait", retryInMs: 200, reason: "another worker is settling an interrupted command's changes" };
    const outcome = await settleOrphan(services, layer);
    if (outcome === "taken") return { kind: "wait", retryInMs: 200, reason: "another worker is settling an interrupted command's changes" };
    if (outcome === "failed") return { kind: "wait", retryInMs: 1000, reason: "an interrupted command's changes could not be settled yet" };
  }
  return { kind: "clear" };
}

async function settleOrphan(services: LayerServices, orphan: FoundLayer): Promise<"settled" | "taken" | "failed"> {
  if (!services.callLayers.ok) return "failed";
  const { layers } = services.callLayers;
  const { meta } = orphan;
  // Without its record the folder was made by a worker that died before the command started.
  if (!meta) {
    await removeLayerFolder(orphan.dir);
    return "settled";
  }
  // Another worker of this host may be taking it at the same moment: one rename wins.
  const dir = layers.claim(orphan.dir);
  if (dir === null) return "taken";
  try {
    const { store } = services;
    const result = await settleLayer(
      { dir, folders: { upperDir: `${dir}/upper`, workDir: `${dir}/work` }, startedAtMs: Date.parse(meta.createdAt), meta },
      { blobs: { put: (content) => store.blobs.putBlob(meta.tenantId, content) }, workspacesDir: services.config.workspaces.dir },
    );
    await store.toolCalls.insertFileChanges(
      { tenantId: meta.tenantId, sessionId: meta.sessionId, runId: meta.runId, toolCallId: meta.toolCallId },
      result.records,
    );
    await removeLayerFolder(dir);
    services.logger.warn(
      { toolCallId: meta.toolCallId, records: result.records.length, note: result.note },
      "a layer whose worker died was settled: its records stored (once), its changes applied where nothing changed since",
    );
    return "settled";
  } catch (error) {
    const attempts = layers.countFailure(dir);
    if (attempts >= maxSettleAttempts) {
      // Kept whole in the project's trash, so nothing is lost and the project's calls go on.
      await setLayerAside(dir, meta, services.config.workspaces.dir);
      services.logger.error(
        { err: error, toolCallId: meta.toolCallId, attempts },
        "an interrupted command's changes could not be settled; its layer was set aside whole in the project's trash",
      );
      return "settled";
    }
    layers.release(dir);
    services.logger.error({ err: error, dir, attempts }, "an interrupted command's changes could not be settled yet; the layer is kept");
    return "failed";
  }
}
