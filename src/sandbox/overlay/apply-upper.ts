import { chmodSync, renameSync, unlinkSync } from "node:fs";
import path from "node:path";
import { viaDescriptor } from "../../workspace/descriptor-walk.js";
import { placeInTrash } from "../../workspace/project-trash.js";
import type { StrictFolders } from "./strict-folders.js";
import type { LayerPlan } from "./upper-changes.js";

export interface ApplyOutcome {
  /** Upper entries now in the workspace. */
  placed: number;
  /** Workspace entries moved to the project's trash. */
  trashed: number;
  /** Upper entries that could not be placed (the workspace changed under them): in the trash, under the path they were meant for. */
  unplaced: string[];
}

const within = (inner: readonly string[], outer: readonly string[]) =>
  outer.length <= inner.length && outer.every((name, i) => inner[i] === name);

/**
 * Applies a layered call's plan to the workspace (SPEC X7): removals into the
 * project's trash, folder modes, then each upper entry renamed into place, a
 * new folder whole. Every workspace folder is reached by descriptor, never
 * through a symlink (`strict-folders.ts`). Renames move entries out of upper,
 * so an apply cut short by a crash can run again on what is left.
 */
export function applyLayer(plan: LayerPlan, folders: StrictFolders, trash: { root: string; workspaceDir: string }): ApplyOutcome {
  const outcome: ApplyOutcome = { placed: 0, trashed: 0, unplaced: [] };
  const original = (components: readonly string[]) => path.join(trash.workspaceDir, ...components);
  for (const whiteout of plan.strayWhiteouts) {
    try {
      unlinkSync(whiteout);
    } catch {
      // gone already (an apply that ran before)
    }
  }
  const removed: string[][] = [];
  for (const components of plan.removals) {
    if (removed.some((done) => within(components, done))) continue;
    const parent = folders.folder(components.slice(0, -1));
    const name = components[components.length - 1] as string;
    if (parent === null || folders.entry(parent, name) === null) continue;
    folders.forget(components);
    placeInTrash(trash.root, viaDescriptor(parent, name), original(components));
    removed.push(components);
    outcome.trashed++;
  }
  for (const { components, mode } of plan.modes) {
    const fd = folders.folder(components);
    // setuid and setgid never come from a tool process (as for files the door writes).
    if (fd !== null) chmodSync(viaDescriptor(fd), mode & 0o1777);
  }
  for (const move of plan.moves) {
    const parent = folders.folder(move.components.slice(0, -1));
    const name = move.components[move.components.length - 1] as string;
    try {
      if (parent === null) throw new Error("its folder is gone");
      renameSync(move.hostPath, viaDescriptor(parent, name));
      outcome.placed++;
    } catch {
      // A folder or file that appeared in the workspace meanwhile stands there: the call's version is kept in the trash, not lost.
      try {
        placeInTrash(trash.root, move.hostPath, original(move.components));
        outcome.unplaced.push(move.components.join("/"));
      } catch {
        // the entry already left upper (an earlier apply placed it)
      }
    }
  }
  return outcome;
}
