import { applyLayer, type ApplyOutcome } from "../../sandbox/overlay/apply-upper.js";
import { workspaceExists, type CallLayer } from "../../sandbox/overlay/call-layers.js";
import { openStrictFolders } from "../../sandbox/overlay/strict-folders.js";
import { planLayer, type LayerPlan } from "../../sandbox/overlay/upper-changes.js";
import { projectTrashRoot } from "../../workspace/project-trash.js";
import { maxRecordedFileBytes, recordFileChange } from "../file-change.js";
import type { FileChangeRecord, ToolContext } from "../tool.js";

/** How much of one call's changes is recorded file by file (SPEC X7); the rest is summarized, and removals are in the trash. */
const layerLimits = { maxFiles: 2000, maxBytes: 256 * 1024 * 1024, maxFileBytes: maxRecordedFileBytes };

export interface SettledLayer {
  records: FileChangeRecord[];
  /** For the model and the client: what was not recorded per file, and conflicts; null when every change was recorded plainly. */
  note: string | null;
  plan: LayerPlan;
  outcome: ApplyOutcome;
}

/**
 * Ends a layered call (SPEC X7): reads what its command changed, keeps both
 * versions of each file in the blob store, then applies the changes to the
 * workspace. The records are made before the workspace changes, so a crash
 * in between leaves the upper folder to roll forward, never changes without
 * their before.
 */
export async function settleLayer(
  layer: Pick<CallLayer, "folders" | "startedAtMs" | "meta">,
  deps: { blobs: ToolContext["blobs"]; workspacesDir: string },
): Promise<SettledLayer> {
  // The project was deleted while the command ran: there is nothing to apply to, and nothing to keep.
  if (!workspaceExists(layer.meta.workspaceDir)) {
    const plan: LayerPlan = {
      removals: [],
      strayWhiteouts: [],
      modes: [],
      moves: [],
      files: [],
      summarized: { files: 0, roots: [], overLimit: 0 },
      conflicts: [],
    };
    return {
      records: [],
      note: "the workspace was deleted while this command ran; its changes were dropped with it",
      plan,
      outcome: { placed: 0, trashed: 0, unplaced: [] },
    };
  }
  const folders = openStrictFolders(layer.meta.workspaceDir);
  try {
    const plan = await planLayer({ upperDir: layer.folders.upperDir, folders, startedAtMs: layer.startedAtMs, limits: layerLimits });
    const records: FileChangeRecord[] = [];
    for (const file of plan.files) records.push(await recordFileChange(deps, file.path, file.before, file.after));
    const outcome = applyLayer(plan, folders, {
      root: projectTrashRoot(deps.workspacesDir, layer.meta.workspaceDir),
      workspaceDir: layer.meta.workspaceDir,
    });
    return { records, note: describe(plan, outcome), plan, outcome };
  } finally {
    folders.close();
  }
}

function describe(plan: LayerPlan, outcome: ApplyOutcome): string | null {
  const lines: string[] = [];
  const { summarized } = plan;
  if (summarized.files > 0 || summarized.roots.length > 0)
    lines.push(
      `changes under ${summarized.roots.slice(0, 5).join(", ")}${summarized.roots.length > 5 ? ", ..." : ""} are not recorded file by file${summarized.files > 0 ? ` (${summarized.files} files)` : ""}`,
    );
  if (summarized.overLimit > 0)
    lines.push(
      `${summarized.overLimit} changed files were past the recording limits and are not recorded (what was removed or replaced is in the project's trash)`,
    );
  if (plan.conflicts.length > 0)
    lines.push(
      `changed by something else while this command ran, and replaced by its version (the other version is kept in the file change or the trash): ${plan.conflicts.slice(0, 10).join(", ")}`,
    );
  if (outcome.unplaced.length > 0)
    lines.push(
      `could not be placed because the workspace changed meanwhile, kept in the project's trash instead: ${outcome.unplaced.slice(0, 10).join(", ")}`,
    );
  return lines.length > 0 ? lines.join("; ") : null;
}
