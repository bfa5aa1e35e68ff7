import type { CheckpointId, ProjectId } from "../ids.js";
import type { CapturedTree } from "../workspace/checkpoint/tree-entry.js";

/**
 * The last tree this process captured per project, with the checkpoint it became: the next
 * capture on this host starts from it (its stamps skip unchanged files) without reading the tree
 * back from Postgres. Only trusted while that checkpoint is still the project's latest.
 */
export interface KnownTrees {
  get(projectId: ProjectId, checkpointId: CheckpointId): CapturedTree | undefined;
  remember(projectId: ProjectId, checkpointId: CheckpointId, tree: CapturedTree): void;
  forget(projectId: ProjectId): void;
}

export function createKnownTrees(maxProjects = 64): KnownTrees {
  const trees = new Map<ProjectId, { checkpointId: CheckpointId; tree: CapturedTree }>();
  return {
    get(projectId, checkpointId) {
      const known = trees.get(projectId);
      return known?.checkpointId === checkpointId ? known.tree : undefined;
    },
    remember(projectId, checkpointId, tree) {
      trees.delete(projectId);
      trees.set(projectId, { checkpointId, tree });
      // Least recently remembered first out: Map keeps insertion order.
      for (const oldest of trees.keys()) {
        if (trees.size <= maxProjects) break;
        trees.delete(oldest);
      }
    },
    forget: (projectId) => void trees.delete(projectId),
  };
}
