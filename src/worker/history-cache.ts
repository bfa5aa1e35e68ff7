import type { MessagePosition } from "../core/history.js";
import { historyOrigin } from "../store/runs.js";
import { loadHistory, type HistoryEntry } from "../store/messages.js";
import type { Queryable } from "../store/sql-text.js";

/**
 * A worker's copy of the histories it served last, so a step's claim reads
 * only the messages written since its run's previous step instead of the whole
 * session each time (linear, not quadratic, in the length of a run).
 *
 * Sound because history grows at the end: when a step is claimed, every
 * message its run had before is committed, and whatever is written later
 * (this step's answer, its calls' results, a cancelled step's partial text,
 * the next run's input) sits at a later position. Messages are never updated
 * or removed while a session lives. Bounded: the session served longest ago leaves first.
 */
export interface HistoryCache {
  /** The position after which a step of this session needs to read. */
  after(scope: { tenantId: string; sessionId: string }): MessagePosition;
  /** The whole history, given what the claim read after `after`. */
  extend(on: Queryable, run: { tenantId: string; sessionId: string; ordinal: number }, after: MessagePosition, fresh: HistoryEntry[]): Promise<HistoryEntry[]>;
}

interface Cached {
  tenantId: string;
  entries: HistoryEntry[];
}

export function createHistoryCache(maxSessions = 512): HistoryCache {
  const sessions = new Map<string, Cached>();
  const usable = (scope: { tenantId: string; sessionId: string }) => {
    const cached = sessions.get(scope.sessionId);
    return cached && cached.tenantId === scope.tenantId ? cached : undefined;
  };
  return {
    after(scope) {
      return usable(scope)?.entries.at(-1)?.position ?? historyOrigin;
    },
    async extend(on, run, after, fresh) {
      const cached = usable(run);
      const base = cached?.entries.at(-1)?.position ?? historyOrigin;
      // Another step of the session moved the copy meanwhile (a redelivery): read it all again.
      const entries =
        samePosition(base, after) ? [...(cached?.entries ?? []), ...fresh] : samePosition(after, historyOrigin) ? fresh : await loadHistory(on, run.tenantId, run.sessionId, run.ordinal);
      sessions.delete(run.sessionId);
      if (sessions.size >= maxSessions) sessions.delete(sessions.keys().next().value as string);
      sessions.set(run.sessionId, { tenantId: run.tenantId, entries });
      return entries;
    },
  };
}

function samePosition(a: MessagePosition, b: MessagePosition): boolean {
  return a.runOrdinal === b.runOrdinal && a.stepIndex === b.stepIndex && a.part === b.part && a.callIndex === b.callIndex;
}
