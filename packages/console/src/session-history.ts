import type { FoyaEvent, HistoryPoint } from "@foya/client";
import { applyRewind } from "./rewind-fold.js";
import { applyEvent, type Timeline } from "./run-timeline.js";

/** What the session page shows, folded from the session's whole event log: its runs, and where its history was bent. */
export interface SessionHistory {
  runs: Timeline;
  /** The session is a fork (session_forked): its history up to `at` was copied from `sessionId`. */
  forkedFrom: { sessionId: string; at: HistoryPoint; notUndone: number } | null;
  /** The latest rewind, for the notice above the runs. */
  lastRewind: { branchId: string; at: HistoryPoint; restoredBranchId: string | null; messagesSetAside: number; notUndone: number } | null;
}

export const emptyHistory: SessionHistory = { runs: [], forkedFrom: null, lastRewind: null };

/** Folds one event; returns a new history (the old one is not changed). */
export function applySessionEvent(history: SessionHistory, event: FoyaEvent): SessionHistory {
  switch (event.type) {
    case "session_rewound": {
      const { branchId, at, restoredBranchId, messagesSetAside, notUndone } = event.data;
      return {
        ...history,
        runs: applyRewind(history.runs, { branchId, at, restoredBranchId }),
        lastRewind: { branchId, at, restoredBranchId, messagesSetAside, notUndone: notUndone.length },
      };
    }
    case "session_forked": {
      const { fromSessionId, at, notUndone } = event.data;
      return { ...history, forkedFrom: { sessionId: fromSessionId, at, notUndone: notUndone.length } };
    }
    default:
      return { ...history, runs: applyEvent(history.runs, event) };
  }
}
