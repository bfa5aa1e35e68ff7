import type { MessagePosition } from "../../core/history.js";
import { historyOrigin } from "../../store/runs.js";
import type { HistoryEntry } from "../../store/messages.js";
import type { Store } from "../../store/store.js";
import type { SessionId, TenantId } from "../../ids.js";

/**
 * A worker's copy of the histories it served last, so a step's claim reads
 * only the messages written since its run's previous step instead of the whole
 * session each time (linear, not quadratic, in the length of a run).
 *
 * Sound because history grows at the end: when a step is claimed, every
 * message its run had before is committed, and whatever is written later
 * (this step's answer, its calls' results, a cancelled step's partial text,
 * the next run's input) sits at a later position. Messages are never updated
 * or removed while a session lives, except by a rewind (SPEC W2), which sets history aside and
 * bumps the session's epoch: a copy of another epoch is read again whole.
 */
export interface HistoryCache {
  /** The position after which a step of this session needs to read. */
  after(scope: { tenantId: TenantId; sessionId: SessionId }): MessagePosition;
  /** The whole history, given what the claim read after `after`; `messages` reads it all when the copy cannot be used. */
  extend(
    messages: HistoryReads,
    run: { tenantId: TenantId; sessionId: SessionId; ordinal: number },
    read: { after: MessagePosition; epoch: number },
    fresh: HistoryEntry[],
  ): Promise<HistoryEntry[]>;
}

/** How the cache reads a whole history (`store.messages`). */
export type HistoryReads = Pick<Store["messages"], "loadHistory">;

interface Cached {
  tenantId: TenantId;
  epoch: number;
  entries: HistoryEntry[];
  /** About how many characters the entries hold, for the process-wide budget. */
  chars: number;
}

/**
 * `maxSessions` bounds the count; `maxChars` bounds the memory, since a tenant decides how
 * much its histories hold (a session larger than the whole budget is simply not kept).
 */
export function createHistoryCache(options: { maxSessions?: number; maxChars?: number } = {}): HistoryCache {
  const maxSessions = options.maxSessions ?? 512;
  const maxChars = options.maxChars ?? 64 * 1024 * 1024;
  const sessions = new Map<SessionId, Cached>();
  let totalChars = 0;
  const usable = (scope: { tenantId: TenantId; sessionId: SessionId }) => {
    const cached = sessions.get(scope.sessionId);
    return cached && cached.tenantId === scope.tenantId ? cached : undefined;
  };
  const drop = (sessionId: SessionId) => {
    const cached = sessions.get(sessionId);
    if (!cached) return;
    totalChars -= cached.chars;
    sessions.delete(sessionId);
  };
  return {
    after(scope) {
      return usable(scope)?.entries.at(-1)?.position ?? historyOrigin;
    },
    async extend(messages, run, { after, epoch }, fresh) {
      const cached = usable(run);
      const base = cached?.entries.at(-1)?.position ?? historyOrigin;
      const appended = cached !== undefined && cached.epoch === epoch && samePosition(base, after);
      // Another step of the session moved the copy meanwhile (a redelivery): read it all again.
      const entries = appended
        ? [...cached.entries, ...fresh]
        : samePosition(after, historyOrigin)
          ? fresh
          : await messages.loadHistory(run.tenantId, run.sessionId, run.ordinal);
      const chars = (appended ? cached.chars : 0) + charsOf(appended ? fresh : entries);
      drop(run.sessionId);
      if (chars <= maxChars) {
        sessions.set(run.sessionId, { tenantId: run.tenantId, epoch, entries, chars });
        totalChars += chars;
        // The session served longest ago leaves first.
        for (const oldest of sessions.keys()) {
          if (sessions.size <= maxSessions && totalChars <= maxChars) break;
          drop(oldest);
        }
      }
      return entries;
    },
  };
}

function charsOf(entries: readonly HistoryEntry[]): number {
  return entries.reduce((sum, entry) => sum + JSON.stringify(entry.message).length, 0);
}

function samePosition(a: MessagePosition, b: MessagePosition): boolean {
  return a.runOrdinal === b.runOrdinal && a.stepIndex === b.stepIndex && a.part === b.part && a.callIndex === b.callIndex;
}
