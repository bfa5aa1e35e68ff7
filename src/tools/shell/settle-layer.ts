import { applyLayer, type ApplyOutcome } from "../../sandbox/overlay/apply-upper.js";
import { workspaceExists, type CallLayer } from "../../sandbox/overlay/call-layers.js";
import { planLayer, type LayerPlan } from "../../sandbox/overlay/upper-changes.js";
import { timeSlices } from "../../core/time-slices.js";
import { bytesOf, childPath, rootPath } from "../../workspace/entry-path.js";
import { encodeByteText } from "../../workspace/checkpoint/byte-text.js";
import { openFolderHandles } from "../../workspace/folder-handles.js";
import { projectTrashRoot, trashPlacer } from "../../workspace/project-trash.js";
import { maxRecordedFileBytes, recordFileChange } from "../file-change.js";
import type { ToolContext } from "../tool.js";
import { newId } from "../../ids.js";
import {
  isDoorJournal,
  markApplied,
  placedRecords,
  readJournal,
  writeRecords,
  type JournaledRecord,
} from "../../sandbox/overlay/layer-journal.js";

/** How much of one call's changes is recorded file by file (SPEC X7); the rest is summarized, and removals are in the trash. */
const layerLimits = { maxFiles: 2000, maxBytes: 256 * 1024 * 1024, maxFileBytes: maxRecordedFileBytes };

export interface SettledLayer {
  /** Under the ids they are stored with, fixed before the workspace changed. */
  records: JournaledRecord[];
  /** For the model and the client: what was not recorded per file, and what was not applied; null when every change was recorded and applied plainly. */
  note: string | null;
  plan: LayerPlan | null;
  outcome: ApplyOutcome;
}

/**
 * Ends a layered call (SPEC X7): reads what its command changed, keeps both
 * versions of each file in the blob store, then applies the changes to the
 * workspace, except where the workspace changed since the command made its
 * version (those are recorded as not applied). The records are made, and
 * written into the layer's folder (`layer-journal.ts`), before the workspace
 * changes: a crash anywhere after leaves the folder to roll forward, with the
 * records of what was applied, never changes without their record. Settling a
 * layer again (its roll-forward) finishes what is left and answers the
 * records written the first time.
 */
export async function settleLayer(
  layer: Pick<CallLayer, "dir" | "folders" | "startedAtMs" | "meta">,
  deps: { blobs: ToolContext["blobs"]; workspacesDir: string },
): Promise<SettledLayer> {
  const journal = await readJournal(layer.dir);
  if (journal.kind === "applied") return { records: journal.records, note: null, plan: null, outcome: nothingApplied };
  // A door write's journal (no upper): its record if its version was placed; there is nothing to apply.
  if (isDoorJournal(layer.dir))
    return {
      records: journal.kind === "none" ? [] : placedRecords(layer.dir, journal.records),
      note: null,
      plan: null,
      outcome: nothingApplied,
    };
  // The project was deleted while the command ran: there is nothing to apply to, and nothing to keep.
  if (!workspaceExists(layer.meta.workspaceDir)) {
    return {
      records: [],
      note: "the workspace was deleted while this command ran; its changes were dropped with it",
      plan: null,
      outcome: nothingApplied,
    };
  }
  const workspace = openFolderHandles(layer.meta.workspaceDir);
  const upper = openFolderHandles(layer.folders.upperDir);
  const slices = timeSlices();
  try {
    // After a cut-short apply, the plan is of what is left in upper.
    const plan = await planLayer({ upper, workspace, startedAtMs: layer.startedAtMs, limits: layerLimits, slices });
    const planned: JournaledRecord[] = [];
    for (const file of plan.files) {
      const record = { ...(await recordFileChange(deps, file.path, file.before, file.after)), id: newId("fch") };
      planned.push(file.notApplied ? { ...record, notApplied: "changed_since" } : record);
      if (slices.spent()) await slices.pause();
    }
    const records = journal.kind === "recorded" ? recordedAgain(journal.records, planned) : planned;
    if (journal.kind === "none") await writeRecords(layer.dir, records);
    const outcome = await applyLayer(
      plan,
      { upper, workspace },
      {
        placer: trashPlacer(projectTrashRoot(deps.workspacesDir, layer.meta.workspaceDir)),
        workspaceDir: layer.meta.workspaceDir,
        bundleAt: childPath(rootPath, Buffer.from(`.replaced-by-${layer.meta.toolCallId}`)),
      },
      slices,
    );
    await markApplied(layer.dir);
    return { records, note: describe(plan, outcome), plan, outcome };
  } finally {
    upper.close();
    workspace.close();
  }
}

const nothingApplied: ApplyOutcome = { placed: 0, trashed: 0, unplaced: [], setAside: 0 };

/**
 * The records written before an apply that was cut short, each marked not applied where the
 * plan of what was left now finds the workspace changed since (a change made after the crash).
 */
function recordedAgain(written: readonly JournaledRecord[], left: readonly JournaledRecord[]): JournaledRecord[] {
  const notAppliedNow = new Set(left.filter((record) => record.notApplied).map((record) => record.path));
  return written.map((record) => (notAppliedNow.has(record.path) ? { ...record, notApplied: "changed_since" } : record));
}

/** The workspace paths an applied plan may have changed, as tree paths (SPEC W1): what it removed, placed, or changed the mode of. */
export function changedPathsOf(plan: LayerPlan | null): string[] | null {
  if (plan === null) return null;
  const entries = [...plan.removals, ...plan.preserved, ...plan.modes.map((change) => change.entry), ...plan.moves.flat()];
  return entries.map((entry) => encodeByteText(bytesOf(entry)));
}

const listed = (paths: readonly string[], limit = 10) => `${paths.slice(0, limit).join(", ")}${paths.length > limit ? ", ..." : ""}`;

function describe(plan: LayerPlan, outcome: ApplyOutcome): string | null {
  const lines: string[] = [];
  const { summarized } = plan;
  if (summarized.files > 0 || summarized.roots.length > 0)
    lines.push(
      `changes under ${listed(summarized.roots, 5)} are not recorded file by file${summarized.files > 0 ? ` (${summarized.files} files)` : ""}`,
    );
  if (summarized.overLimit > 0)
    lines.push(
      `${summarized.overLimit} changed files were past the recording limits and are not recorded (what was removed or replaced is in the project's trash)`,
    );
  if (summarized.unnamed > 0)
    lines.push(
      `${summarized.unnamed} changed files have names that are not valid UTF-8 and are not recorded (what was removed or replaced is in the project's trash)`,
    );
  if (plan.notApplied.length > 0)
    lines.push(
      `not applied, because the workspace changed there since this command made its version (the newer content was kept; this command's version is in its file change, or in the project's trash): ${listed(plan.notApplied)}`,
    );
  if (outcome.unplaced.length > 0)
    lines.push(
      `could not be placed because the workspace changed meanwhile, kept in the project's trash instead: ${listed(outcome.unplaced)}`,
    );
  return lines.length > 0 ? lines.join("; ") : null;
}
