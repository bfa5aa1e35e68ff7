import { putBlob } from "../store/blobs.js";
import { insertFileChanges } from "../store/tool-calls.js";
import type { Services } from "../services.js";
import { removeLayerNow } from "../sandbox/overlay/call-layers.js";
import { settleLayer } from "../tools/shell/settle-layer.js";

/**
 * Rolls forward the layers of calls whose worker died on this host (SPEC X7,
 * D3): what the interrupted command wrote before it was killed is recorded as
 * file changes of its call (which recovery marks `interrupted`, never run
 * again) and applied to the workspace, as it would have been without the
 * layer. Never discarded: those writes may be all that is left of the call.
 * Answers how many layers were settled.
 */
export async function rollForwardLayers(services: Pick<Services, "callLayers" | "config" | "db" | "logger">): Promise<number> {
  if (!services.callLayers.ok) return 0;
  const { layers } = services.callLayers;
  let settled = 0;
  for (const orphan of layers.orphans()) {
    const { meta } = orphan;
    // Without its record the folder was made by a worker that died before the command started.
    if (!meta) {
      removeLayerNow(orphan.dir);
      continue;
    }
    // Another worker of this host may be taking it at the same moment: one rename wins.
    const dir = layers.claim(orphan.dir);
    if (dir === null) continue;
    try {
      const db = services.db.db;
      const result = await settleLayer(
        { folders: { upperDir: `${dir}/upper`, workDir: `${dir}/work` }, startedAtMs: Date.parse(meta.createdAt), meta },
        { blobs: { put: (content) => putBlob(db, meta.tenantId, content) }, workspacesDir: services.config.workspaces.dir },
      );
      await insertFileChanges(
        db,
        { tenantId: meta.tenantId, sessionId: meta.sessionId, runId: meta.runId, toolCallId: meta.toolCallId },
        result.records,
      );
      removeLayerNow(dir);
      settled++;
      services.logger.warn(
        { toolCallId: meta.toolCallId, records: result.records.length, note: result.note },
        "an interrupted command's changes were recorded and applied",
      );
    } catch (error) {
      services.logger.error({ err: error, dir }, "an interrupted command's layer could not be rolled forward; it is kept");
    }
  }
  return settled;
}
