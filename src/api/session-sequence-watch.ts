import type { Store } from "../store/store.js";
import type { Logger } from "../logger.js";
import type { SessionId } from "../ids.js";

/**
 * The safety net of the SSE streams of one API process (SPEC D5): a pub/sub message Redis
 * dropped must still reach the client. Rather than every stream re-reading the event log on
 * every keepalive, one query per interval reads the latest sequence number
 * (`sessions.event_seq`, bumped in the same statement as each append) of every session with
 * an open stream, and only a stream that is behind reads the log.
 */
export interface SessionSequenceWatch {
  /** Calls `onLatest` with the session's latest sequence number once per interval; answers the unwatch. */
  watch(sessionId: SessionId, onLatest: (latestSeq: number) => void): () => void;
}

/** Sessions per query; more are read in several. */
const batchSize = 1000;

export function createSessionSequenceWatch(store: Pick<Store, "sessions">, intervalMs: number, logger: Logger): SessionSequenceWatch {
  const listeners = new Map<SessionId, Set<(latestSeq: number) => void>>();
  let timer: NodeJS.Timeout | undefined;
  let polling = false;

  const poll = async () => {
    if (polling) return;
    polling = true;
    try {
      const ids = [...listeners.keys()];
      for (let start = 0; start < ids.length; start += batchSize) {
        const rows = await store.sessions.eventSeqOfSessions(ids.slice(start, start + batchSize));
        for (const row of rows) for (const listener of listeners.get(row.id) ?? []) listener(row.eventSeq);
      }
    } catch (error) {
      logger.warn({ err: error }, "reading the latest event sequence numbers failed");
    } finally {
      polling = false;
    }
  };

  return {
    watch(sessionId, onLatest) {
      let set = listeners.get(sessionId);
      if (!set) {
        set = new Set();
        listeners.set(sessionId, set);
      }
      set.add(onLatest);
      if (!timer) {
        timer = setInterval(() => void poll(), intervalMs);
        timer.unref();
      }
      return () => {
        const current = listeners.get(sessionId);
        current?.delete(onLatest);
        if (current?.size === 0) listeners.delete(sessionId);
        if (listeners.size === 0 && timer) {
          clearInterval(timer);
          timer = undefined;
        }
      };
    },
  };
}
