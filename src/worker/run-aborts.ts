import type { RunId } from "../ids.js";
/** AbortControllers of the runs this process is working on, reached by the cancel broadcast. */
export interface RunAborts {
  register(runId: RunId): AbortController;
  unregister(runId: RunId, controller: AbortController): void;
  abort(runId: RunId, reason: string): void;
  abortAll(reason: string): void;
}

export function createRunAborts(): RunAborts {
  const byRun = new Map<string, Set<AbortController>>();
  return {
    register(runId) {
      const controller = new AbortController();
      let set = byRun.get(runId);
      if (!set) {
        set = new Set();
        byRun.set(runId, set);
      }
      set.add(controller);
      return controller;
    },
    unregister(runId, controller) {
      const set = byRun.get(runId);
      set?.delete(controller);
      if (set?.size === 0) byRun.delete(runId);
    },
    abort(runId, reason) {
      for (const controller of byRun.get(runId) ?? []) controller.abort(new Error(reason));
    },
    abortAll(reason) {
      for (const set of byRun.values()) for (const controller of set) controller.abort(new Error(reason));
    },
  };
}
