import type { CheckpointId, ProjectId } from "../ids.js";
import type { CapturedTree } from "../workspace/checkpoint/tree-entry.js";
import type { TreeIndex } from "./tree-digest.js";

/**
 * The last tree this process captured per project, with the checkpoint it became: the next
 * capture on this host starts from it (its stamps skip unchanged files) without reading the tree
 * back from Postgres, and a batch whose calls reported every path they changed applies those
 * paths to it without walking the folder. Only trusted while that checkpoint is still the
 * project's latest.
 */
export interface KnownTree {
  tree: CapturedTree;
  /** Its folders' digests, updated in place of a whole digest (`tree-digest.ts`). */
  index: TreeIndex;
  /** The database's clock before the capture began (`latestCheckpointAt`): work that ended before it is in the tree. */
  capturedAfter: string;
  /** Deltas between this checkpoint and the full tree it builds on. */
  deltasSinceFull: number;
}

export interface KnownTrees {
  get(projectId: ProjectId, checkpointId: CheckpointId): KnownTree | undefined;
  remember(projectId: ProjectId, checkpointId: CheckpointId, known: KnownTree): void;
  forget(projectId: ProjectId): void;
  /** Whatever this process holds for the project, before the latest checkpoint is known (to ask about it meanwhile). */
  peek(projectId: ProjectId): { checkpointId: CheckpointId; known: KnownTree } | undefined;
}

export function createKnownTrees(maxProjects = 64): KnownTrees {
  const trees = new Map<ProjectId, { checkpointId: CheckpointId; known: KnownTree }>();
  return {
    get(projectId, checkpointId) {
      const held = trees.get(projectId);
      return held?.checkpointId === checkpointId ? held.known : undefined;
    },
    remember(projectId, checkpointId, known) {
      trees.delete(projectId);
      trees.set(projectId, { checkpointId, known });
      // Least recently remembered first out: Map keeps insertion order.
      for (const oldest of trees.keys()) {
        if (trees.size <= maxProjects) break;
        trees.delete(oldest);
      }
    },
    forget: (projectId) => void trees.delete(projectId),
    peek: (projectId) => trees.get(projectId),
  };
}
