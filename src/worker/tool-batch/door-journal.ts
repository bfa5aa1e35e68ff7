import path from "node:path";
import { writeRecords, type JournaledRecord } from "../../sandbox/overlay/layer-journal.js";
import type { CallLayerOwner, CallLayers } from "../../sandbox/overlay/call-layers.js";
import type { StagedVersion, UpdateJournal } from "../../workspace/workspace-files.js";
import { newId } from "../../ids.js";
import { recordFileChange } from "../../tools/file-change.js";
import type { ToolContext } from "../../tools/tool.js";

/**
 * A `write` or `edit` through the workspace door, journaled like a command's layer (SPEC F1, D3):
 * the call gets a folder of its own under the call layers (`openJournal`), the door stages the
 * new version in it, and the record (both versions in the blob store, its id fixed) is written
 * there before the version is placed. The folder is held until the call's result is stored
 * (`run-call.ts`); a worker killed before that leaves it to roll forward (`roll-forward-layers.ts`),
 * which stores the record once if the version was placed, and nothing if it was not
 * (`placedRecords`): never a change without its record, never a record of a change not made.
 */
export function doorJournal(deps: {
  layers: CallLayers;
  workspaceDir: string;
  owner: CallLayerOwner;
  blobs: ToolContext["blobs"];
  onError: (message: string, error: unknown) => void;
}): UpdateJournal<JournaledRecord> {
  const { layers, owner } = deps;
  return {
    folder() {
      try {
        const dir = layers.openJournal(deps.workspaceDir, owner);
        if (dir !== null) layers.hold(owner.toolCallId, { dir });
        return dir;
      } catch (error) {
        // The write goes on unjournaled, as before: its record is stored with its result.
        deps.onError("a file write's journal could not be made; the write goes on unjournaled", error);
        return null;
      }
    },
    async beforePlace(version: StagedVersion) {
      const record: JournaledRecord = { ...(await recordFileChange(deps, version.path, version.before, version.after)), id: newId("fch") };
      // By name: a claim renames the folder.
      await writeRecords(path.dirname(version.staged), [{ ...record, staged: path.basename(version.staged) }]);
      return record;
    },
  };
}
