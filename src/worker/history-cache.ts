import type { MessagePosition } from "../core/history.js";
import { loadHistory, type HistoryEntry } from "../store/messages.js";
import type { Queryable } from "../store/sql-text.js";

/**
 * A worker's copy of the histories it served last, so a step reads only the
 * messages written since its run's previous step instead of the whole session
 * each time (linear, not quadratic, in the length of a run).
 *
 * Sound because history grows at the end: when a step is claimed, every
 * message its run had before is committed, and whatever is written later
 * (this step's answer, its calls' results, a cancelled step's partial text,
 * the next run's input) sits at a later position. Messages are never updated
 * or removed while a session lives. Bounded: the session served longest ago leaves first.
 */
export interface HistoryCache {
  load(on: Queryable, run: { tenantId: string; sessionId: string; ordinal: number }): Promise<HistoryEntry[]>;
}

interface Cached {
  tenantId: string;
  entries: HistoryEntry[];
  upTo: number;
}

export function createHistoryCache(maxSessions = 512): HistoryCache {
  const sessions = new Map<string, Cached>();
  return {
    async load(on, run) {
      const cached = sessions.get(run.sessionId);
      const usable = cached && cached.tenantId === run.tenantId && cached.upTo <= run.ordinal ? cached : undefined;
      const last: MessagePosition | undefined = usable?.entries.at(-1)?.position;
      const fresh = await loadHistory(on, run.tenantId, run.sessionId, run.ordinal, last);
      const entries = usable ? [...usable.entries, ...fresh] : fresh;
      sessions.delete(run.sessionId);
      if (sessions.size >= maxSessions) sessions.delete(sessions.keys().next().value as string);
      sessions.set(run.sessionId, { tenantId: run.tenantId, entries, upTo: run.ordinal });
      return entries;
    },
  };
}
