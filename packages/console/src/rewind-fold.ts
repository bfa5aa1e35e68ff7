import type { HistoryPoint } from "@foya/client";
import type { RunView, Timeline } from "./run-timeline.js";

/** What a `session_rewound` event says happened to the history. */
export interface RewindFacts {
  branchId: string;
  at: HistoryPoint;
  restoredBranchId: string | null;
}

/**
 * Folds a rewind into the runs on screen as the service applied it to the history: first what
 * followed the point is set aside into the new branch (later runs whole, the point's own run after
 * its step), then the branch it brought back (if any) returns. Runs are matched by their ordinal
 * (run_start), the numbering points use; nothing is dropped, so a later rewind can bring it back.
 */
export function applyRewind(runs: Timeline, rewind: RewindFacts): Timeline {
  return runs.map((run) => {
    const cut = setAsideAfter(run, rewind.at, rewind.branchId);
    return rewind.restoredBranchId === null ? cut : bringBack(cut, rewind.restoredBranchId);
  });
}

/** Runs, steps and calls still in the history (not set aside by a rewind). */
export function inHistory<Item extends { setAsideBy?: string }>(item: Item): boolean {
  return item.setAsideBy === undefined;
}

function setAsideAfter(run: RunView, at: HistoryPoint, branchId: string): RunView {
  if (!inHistory(run) || run.ordinal === undefined || run.ordinal < at.runOrdinal) return run;
  if (run.ordinal > at.runOrdinal) return { ...run, setAsideBy: branchId };
  const lastKept = at.stepIndex;
  if (lastKept === null) return run;
  const mark = <Item extends { setAsideBy?: string }>(item: Item, index: number): Item =>
    index > lastKept && inHistory(item) ? { ...item, setAsideBy: branchId } : item;
  return {
    ...run,
    steps: run.steps.map((step) => mark(step, step.index)),
    calls: run.calls.map((call) => mark(call, call.stepIndex)),
  };
}

function bringBack(run: RunView, branchId: string): RunView {
  const back = <Item extends { setAsideBy?: string }>(item: Item): Item => {
    if (item.setAsideBy !== branchId) return item;
    const { setAsideBy: _setAside, ...rest } = item;
    return rest as Item;
  };
  return { ...back(run), steps: run.steps.map(back), calls: run.calls.map(back) };
}
