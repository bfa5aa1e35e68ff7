import { chmodSync, constants, openSync, unlinkSync } from "node:fs";
import { link, rename } from "node:fs/promises";
import { closeQuietly, O_PATH } from "../../workspace/descriptor-walk.js";
import { timeSlices, type TimeSlices } from "../../core/time-slices.js";
import { hostPathOf, isAtOrBelow, namesOf, shownOf, type EntryPath, viaDescriptorBytes } from "../../workspace/entry-path.js";
import type { FolderHandles } from "../../workspace/folder-handles.js";
import type { TrashPlacer } from "../../workspace/project-trash.js";
import type { LayerPlan } from "./upper-changes.js";

/** Past this many replaced files kept by no record, they go into the trash as one folder. */
const bundleAbove = 100;
/** Folders worked on at once by the large loops, each with two descriptors of its own. */
const foldersAtOnce = 4;
const slash = Buffer.from("/");

/**
 * Runs `op` over `entries` grouped by their folder, a few folders at once, each folder's entries in
 * order, through descriptors of the group's own (the shared handles may let theirs go meanwhile).
 * The renames and links then wait in node's thread pool, not on the event loop, where a journal
 * commit of the file system could hold one for tens of milliseconds.
 */
async function byFolder(
  entries: readonly EntryPath[],
  sides: { upper: FolderHandles; workspace: FolderHandles },
  slices: TimeSlices,
  op: (folders: { upper: number | null; workspace: number | null }, entry: EntryPath, folder: EntryPath) => Promise<void>,
): Promise<void> {
  const groups = new Map<EntryPath, EntryPath[]>();
  for (const entry of entries) {
    if (slices.spent()) await slices.pause();
    if (!entry.parent) continue;
    const group = groups.get(entry.parent);
    if (group) group.push(entry);
    else groups.set(entry.parent, [entry]);
  }
  const queue = [...groups];
  const own = (fd: number | null) => (fd === null ? null : openSync(`/proc/self/fd/${fd}`, O_PATH | constants.O_DIRECTORY));
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [folder, group] = next;
      const folders = { upper: own(sides.upper.folder(folder)), workspace: own(sides.workspace.folder(folder)) };
      try {
        for (const entry of group) {
          await op(folders, entry, folder);
          if (slices.spent()) await slices.pause();
        }
      } finally {
        if (folders.upper !== null) closeQuietly(folders.upper);
        if (folders.workspace !== null) closeQuietly(folders.workspace);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(foldersAtOnce, queue.length) }, worker));
}

export interface ApplyOutcome {
  /** Upper entries now in the workspace. */
  placed: number;
  /** Workspace entries moved to the project's trash. */
  trashed: number;
  /** Upper entries that could not be placed (the workspace changed under them): in the trash, under the path they were meant for. */
  unplaced: string[];
  /** Upper entries not applied because the workspace changed there since (the plan's `setAside`) now in the trash. */
  setAside: number;
}

/**
 * Applies a layered call's plan to the workspace (SPEC X7): removals into the
 * project's trash, folder modes, then each upper entry renamed into place, a
 * new folder whole; what the plan sets aside (not applied: the workspace
 * changed there since) goes to the trash under its path. Each rename is
 * atomic, so a reader of the workspace sees a file's old content or its new
 * one, never a half-written one. Every folder on both sides is reached by
 * descriptor, never through a symlink, names as bytes; renames move entries
 * out of upper, so an apply cut short by a crash can run again on what is
 * left. Linear in the plan's size and run in time slices: a call that
 * rewrote 200,000 files does not stop its worker.
 */
export async function applyLayer(
  plan: LayerPlan,
  sides: { upper: FolderHandles; workspace: FolderHandles },
  trash: {
    placer: TrashPlacer;
    workspaceDir: string;
    /** Where, in the workspace, the folder of the replaced files kept together (past `bundleAbove`) is restored to. */
    bundleAt: EntryPath;
  },
  slices: TimeSlices = timeSlices(),
): Promise<ApplyOutcome> {
  const { upper, workspace } = sides;
  const outcome: ApplyOutcome = { placed: 0, trashed: 0, unplaced: [], setAside: 0 };
  const original = (entry: EntryPath) => hostPathOf(trash.workspaceDir, entry);
  const inUpper = (entry: EntryPath): Buffer | null => {
    const fd = entry.parent ? upper.folder(entry.parent) : null;
    return fd === null ? null : viaDescriptorBytes(fd, entry.name);
  };
  for (const whiteout of plan.strayWhiteouts) {
    if (slices.spent()) await slices.pause();
    const at = inUpper(whiteout);
    try {
      if (at) unlinkSync(at);
    } catch {
      // gone already (an apply that ran before)
    }
  }
  // Shallowest first, and nothing below an entry that already went (a prefix set: linear, not every removal against every other).
  const removed = new Set<EntryPath>();
  for (const entry of [...plan.removals].sort((a, b) => a.depth - b.depth)) {
    if (slices.spent()) await slices.pause();
    if (isAtOrBelow(entry, removed) || !entry.parent) continue;
    if (workspace.entry(entry.parent, entry.name) === null) continue;
    const parentFd = workspace.folder(entry.parent);
    if (parentFd === null) continue;
    workspace.forget(entry);
    trash.placer.place(viaDescriptorBytes(parentFd, entry.name), original(entry));
    removed.add(entry);
    outcome.trashed++;
  }
  // Many at once go into one trash entry (a folder restored whole), a few each into its own.
  const preserved: EntryPath[] = [];
  for (const entry of plan.preserved) {
    if (!isAtOrBelow(entry, removed)) preserved.push(entry);
    if (slices.spent()) await slices.pause();
  }
  if (preserved.length > bundleAbove) {
    const bundle = trash.placer.bundle(hostPathOf(trash.workspaceDir, trash.bundleAt));
    await byFolder(preserved, sides, slices, async (folders, entry, folder) => {
      if (folders.workspace === null) return;
      const from = viaDescriptorBytes(folders.workspace, entry.name);
      const into = bundle.folderFor(namesOf(folder));
      try {
        if (into) await link(from, Buffer.concat([into, slash, entry.name]));
        else trash.placer.keepCopy(from, original(entry));
        outcome.trashed++;
      } catch {
        // gone meanwhile: nothing is replaced
      }
    });
  } else {
    for (const entry of preserved) {
      if (slices.spent()) await slices.pause();
      const parentFd = entry.parent ? workspace.folder(entry.parent) : null;
      if (parentFd === null) continue;
      try {
        trash.placer.keepCopy(viaDescriptorBytes(parentFd, entry.name), original(entry));
        outcome.trashed++;
      } catch {
        // gone meanwhile: nothing is replaced
      }
    }
  }
  for (const { entry, mode } of plan.modes) {
    const fd = workspace.folder(entry);
    // setuid and setgid never come from a tool process (as for files the door writes).
    if (fd !== null) chmodSync(viaDescriptorBytes(fd), mode & 0o1777);
  }
  const keepInTrash = (entry: EntryPath): boolean => {
    const from = inUpper(entry);
    if (!from) return false;
    try {
      trash.placer.place(from, original(entry));
      return true;
    } catch {
      // the entry already left upper (an earlier apply placed it)
      return false;
    }
  };
  // In rank order (.git's objects before what names them), each rank's folders a few at once.
  for (const rank of plan.moves) {
    await byFolder(rank, sides, slices, async (folders, entry) => {
      try {
        if (folders.upper === null) return;
        if (folders.workspace === null) throw new Error("its folder is gone");
        await rename(viaDescriptorBytes(folders.upper, entry.name), viaDescriptorBytes(folders.workspace, entry.name));
        outcome.placed++;
      } catch {
        // A folder or file that appeared in the workspace meanwhile stands there: the call's version is kept in the trash, not lost.
        if (keepInTrash(entry)) outcome.unplaced.push(shownOf(entry));
      }
    });
  }
  for (const entry of plan.setAside) {
    if (slices.spent()) await slices.pause();
    if (keepInTrash(entry)) outcome.setAside++;
  }
  return outcome;
}
