import { parseId } from "../ids.js";
import { evictHostCopy, hostCopies, type HostCopyRef, hostWorkspacePath } from "../workspace/host-copies.js";
import { projectTrashRoot } from "../workspace/project-trash.js";
import { removeTreeGradually } from "../workspace/remove-tree.js";
import type { JobDeps } from "./job-deps.js";

/** A removal's slices here are as short as the copies' own (src/workspace/host-copies.ts). */
const sliceMs = 20;

export interface CopiesCleaned {
  /** Copies of deleted (or unknown) projects removed, with their trash. */
  deleted: number;
  /** Copies of projects placed elsewhere, or here at a newer epoch, or released: set aside and removed. */
  stale: number;
}

/**
 * One look at the copies this host holds (SPEC W3, F4), by their markers: a deleted project's copy
 * goes with its trash, unless the project is placed here (this host's removal of the project
 * claims it, src/worker/project-removal.ts); a copy of a project placed on another host, placed
 * here at another epoch, or released, is stale and goes (its next placement here rebuilds the
 * folder from the latest checkpoint). Each removal holds the project's lock on this host only
 * while the folder is set aside, and only while the marker still names the epoch looked at: a
 * batch that claimed the folder for a newer placement meanwhile keeps it.
 */
export async function cleanHostCopies(
  deps: Pick<JobDeps, "store" | "config" | "logger">,
  hostId: string,
  signal?: AbortSignal,
): Promise<CopiesCleaned> {
  const root = deps.config.workspaces.dir;
  const cleaned: CopiesCleaned = { deleted: 0, stale: 0 };
  // Markers are names of folders: only those that are ids are looked up.
  const copies = (await hostCopies(root)).filter((copy) => parseId("ten", copy.tenantId) && parseId("prj", copy.projectId));
  if (copies.length === 0) return cleaned;
  const states = new Map(
    (await deps.store.projectRemoval.hostCopyStates(copies.map((copy) => copy.projectId))).map((s) => [s.projectId, s]),
  );
  for (const copy of copies) {
    if (signal?.aborted) break;
    const state = states.get(copy.projectId);
    if (!state) continue;
    const ref: HostCopyRef = { tenantId: copy.tenantId, projectId: copy.projectId };
    if (state.deleted) {
      if (state.hostId === hostId) continue;
      if (await evictHostCopy(root, ref, copy.epoch)) {
        await removeTreeGradually(projectTrashRoot(root, hostWorkspacePath(root, ref)), { sliceMs, ...(signal ? { signal } : {}) });
        cleaned.deleted++;
      }
    } else if (state.hostId !== hostId || state.epoch !== copy.epoch) {
      if (await evictHostCopy(root, ref, copy.epoch)) cleaned.stale++;
    }
  }
  if (cleaned.deleted + cleaned.stale > 0) deps.logger.info({ hostId, ...cleaned }, "copies this host no longer needs removed");
  return cleaned;
}
