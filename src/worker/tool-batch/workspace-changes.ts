import type { ScopedTools } from "../../mcp/tool-catalog.js";
import type { CallProcesses } from "../../tools/call-processes.js";
import type { PreparedLayer } from "../../tools/shell/spawn-shell.js";
import type { WorkspaceFiles } from "../../workspace/workspace-files.js";

/**
 * What one batch attempt's calls changed in the workspace, path by path (SPEC W1), so its
 * checkpoint can capture those paths instead of walking the folder. Paths come from the door
 * (what it wrote, trashed or restored) and from a foreground command's layer (what its apply
 * placed, removed or changed the mode of). Anything that may change the workspace otherwise (a
 * command run on the workspace itself, a background command, a tool that does not say its
 * changes go through its context, a door write that failed halfway) makes the log `unknown`: the
 * checkpoint then walks the folder.
 */
export interface WorkspaceChangeLog {
  changed(paths: Iterable<string>): void;
  unknown(): void;
  /** The changed paths, or null when some change is not known path by path. */
  paths(): ReadonlySet<string> | null;
}

/** `onChange`: called at each change noted. */
export function createWorkspaceChangeLog(onChange?: () => void): WorkspaceChangeLog {
  const changed = new Set<string>();
  let known = true;
  return {
    changed(paths) {
      for (const path of paths) changed.add(path);
      onChange?.();
    },
    unknown() {
      known = false;
      onChange?.();
    },
    paths: () => (known ? changed : null),
  };
}

/** Whether a tool's calls change the workspace only through their context's door and layered processes, or not at all. */
export function changesAreReported(tools: ScopedTools, name: string): boolean {
  const tool = tools.registry.get(name);
  if (!tool) return true; // an unknown tool runs nothing: its call fails as unknown
  return tool.sideEffect === "read" || tool.sideEffect === "network" || tool.reportsWorkspaceChanges === true;
}

/** Whether a tool's calls change nothing in a workspace: reads and fetches. */
export function changesNothing(tools: ScopedTools, name: string): boolean {
  const sideEffect = tools.registry.get(name)?.sideEffect;
  return sideEffect === "read" || sideEffect === "network";
}

/** The door, noting every path it changes. */
export function observedWorkspace(door: WorkspaceFiles, log: WorkspaceChangeLog): WorkspaceFiles {
  const noting = async <T extends { path: string }>(work: () => Promise<T>, changed: (result: T) => boolean = () => true): Promise<T> => {
    try {
      const result = await work();
      if (changed(result)) log.changed([result.path]);
      return result;
    } catch (error) {
      log.unknown();
      throw error;
    }
  };
  return {
    ...door,
    update: (requested, decide, options) =>
      noting(
        () => door.update(requested, decide, options),
        (outcome) => outcome.kind === "written",
      ),
    append: (requested, content) => noting(() => door.append(requested, content)),
    trash: (requested, options) => noting(() => door.trash(requested, options)),
    restoreFromTrash: (requested, from) => noting(() => door.restoreFromTrash(requested, from)),
  };
}

/** A call's processes, noting what a layered command's apply changed; a command on the workspace itself is `unknown`. */
export function observedProcesses(processes: CallProcesses, log: WorkspaceChangeLog): CallProcesses {
  return {
    limits: processes.limits,
    async prepare(command, output, how) {
      const prepared = await processes.prepare(command, output, how);
      if ("unavailable" in prepared) return prepared;
      if (!prepared.layer || how?.background) {
        log.unknown();
        return prepared;
      }
      return { ...prepared, layer: observedLayer(prepared.layer, log) };
    },
  };
}

function observedLayer(layer: PreparedLayer, log: WorkspaceChangeLog): PreparedLayer {
  return {
    discard: () => layer.discard(),
    async settle(blobs) {
      try {
        const settled = await layer.settle(blobs);
        if (settled.changedPaths === null) log.unknown();
        else log.changed(settled.changedPaths);
        return settled;
      } catch (error) {
        // Kept for a roll-forward: it lands later, outside this batch.
        log.unknown();
        throw error;
      }
    },
  };
}
