import type { SessionEvent } from "../core/events.js";
import type { EventBus } from "../events/event-bus.js";
import type { Logger } from "../logger.js";
import type { Store } from "../store/store.js";
import type { SessionId, TenantId } from "../ids.js";
import type { SessionSequenceWatch } from "./session-sequence-watch.js";

/**
 * The live events of one session in one API process, shared by every SSE stream of that
 * session there (SPEC D5). It subscribes once, parses each pub/sub message once, turns each
 * event into its SSE frame once, and fills a gap (a message Redis dropped, seen as a later
 * event or by the process's sequence watch) with one Postgres read for all its streams. It
 * keeps a window of the latest frames, contiguous by sequence number; each stream copies
 * from it at its own pace and never holds the feed up (src/api/session-event-stream.ts).
 */
export interface SessionFeed {
  readonly tenantId: TenantId;
  readonly sessionId: SessionId;
  /** The last sequence number framed; valid once `ready` resolved. */
  readonly head: number;
  /** The oldest sequence number the window holds (`head + 1` when it holds none). */
  readonly windowStart: number;
  /** Resolves once subscribed and `head` is known. */
  readonly ready: Promise<void>;
  /** The frames after `afterSeq`, up to `max`, or null when the window no longer holds `afterSeq + 1`. */
  framesAfter(afterSeq: number, max: number): Frame[] | null;
  /** Called after frames were added; answers the unlisten. */
  listen(onFrames: () => void): () => void;
}

export interface Frame {
  seq: number;
  /** `event: <type>\ndata: <event JSON>\nid: <seq>\n\n`, encoded. */
  bytes: Uint8Array;
}

/** One SSE frame, the same bytes as hono's `writeSSE` wrote (the JSON holds no line break). */
export function frameOf(event: SessionEvent): Frame {
  return { seq: event.seq, bytes: Buffer.from(`event: ${event.type}\ndata: ${JSON.stringify(event)}\nid: ${event.seq}\n\n`) };
}

/** The feeds of this process, one per session with an open stream, closed with the last one. */
export interface SessionFeeds {
  /** The session's feed, opened on first use; `release` once the stream ends. */
  acquire(tenantId: TenantId, sessionId: SessionId): { feed: SessionFeed; release: () => void };
}

export interface SessionFeedDeps {
  store: Pick<Store, "events" | "sessions">;
  bus: Pick<EventBus, "subscribe">;
  sequences: SessionSequenceWatch;
  logger: Logger;
  /** Frames kept per session for streams that are behind (1,024); older ones are read from Postgres. */
  windowSize?: number;
  /** The same window's bound in bytes (4 MiB): events with long texts keep fewer frames. */
  windowBytes?: number;
}

const fillPage = 500;

export function createSessionFeeds(deps: SessionFeedDeps): SessionFeeds {
  const feeds = new Map<string, { feed: OpenFeed; users: number }>();
  return {
    acquire(tenantId, sessionId) {
      const key = `${tenantId}:${sessionId}`;
      let entry = feeds.get(key);
      if (!entry) {
        const opened = { feed: openFeed(deps, tenantId, sessionId), users: 0 };
        feeds.set(key, opened);
        // A feed that could not start is not handed to the next stream: that one opens its own.
        opened.feed.ready.catch(() => {
          if (feeds.get(key) === opened) feeds.delete(key);
        });
        entry = opened;
      }
      const current = entry;
      current.users += 1;
      let released = false;
      return {
        feed: current.feed,
        release() {
          if (released) return;
          released = true;
          current.users -= 1;
          if (current.users > 0) return;
          // Closed with its last stream, also when it failed to start and is no longer handed out.
          if (feeds.get(key) === current) feeds.delete(key);
          current.feed.close();
        },
      };
    },
  };
}

interface OpenFeed extends SessionFeed {
  close(): void;
}

function openFeed(deps: SessionFeedDeps, tenantId: TenantId, sessionId: SessionId): OpenFeed {
  const windowSize = deps.windowSize ?? 1024;
  const windowBytes = deps.windowBytes ?? 4 * 1024 * 1024;
  const listeners = new Set<() => void>();
  /** frames[i].seq === head - frames.length + 1 + i. */
  let frames: Frame[] = [];
  let bytes = 0;
  let head = 0;
  let closed = false;
  let unsubscribe: () => void = () => undefined;
  let unwatch: () => void = () => undefined;
  /** Live events that arrived while a fill (or the start) was under way: handled after it, in order. */
  let pending: SessionEvent[] = [];
  let busy = true;
  let notifying = false;

  // Once per turn of the event loop: the events of one message (one commit) reach a stream together.
  const notify = () => {
    if (notifying) return;
    notifying = true;
    queueMicrotask(() => {
      notifying = false;
      for (const listener of listeners) listener();
    });
  };
  const append = (event: SessionEvent) => {
    const frame = frameOf(event);
    frames.push(frame);
    bytes += frame.bytes.length;
    head = event.seq;
    // Trimmed by a third at a time, so the copy is rare; the newest frame always stays.
    if (frames.length > windowSize * 1.5 || bytes > windowBytes * 1.5) {
      let drop = Math.max(0, frames.length - windowSize);
      let kept = bytes;
      for (let i = 0; i < drop; i++) kept -= (frames[i] as Frame).bytes.length;
      while (kept > windowBytes && drop < frames.length - 1) kept -= (frames[drop++] as Frame).bytes.length;
      frames = frames.slice(drop);
      bytes = kept;
    }
  };
  const warn = (error: unknown) =>
    deps.logger.warn(
      { err: error, tenantId, sessionId, head },
      "reading a session's events for its streams failed; retried on the next event or check",
    );
  /** One read for every stream of the session: the events after `head`, up to `upTo`. */
  const fill = async (upTo: number) => {
    for (;;) {
      const batch = await deps.store.events.readEvents(tenantId, sessionId, head, { limit: fillPage, upTo });
      const from = head;
      for (const event of batch) if (event.seq === head + 1) append(event);
      notify();
      // A short page is the end; a page that moved nothing (never, the log is gap-free) must not loop.
      if (batch.length < fillPage || head === from) return;
    }
  };
  /** Handles live events in order, a gap filled from Postgres first: synchronous unless there is a gap. */
  const drain = async () => {
    busy = true;
    try {
      while (pending.length > 0 && !closed) {
        const event = pending.shift() as SessionEvent;
        if (event.seq <= head) continue;
        if (event.seq > head + 1) {
          try {
            await fill(event.seq - 1);
          } catch (error) {
            // The gap stays: the next event, or the sequence watch, fills it.
            warn(error);
            pending = [];
            return;
          }
          if (event.seq !== head + 1) continue;
        }
        append(event);
        notify();
      }
    } finally {
      busy = false;
    }
  };
  const receive = (event: SessionEvent) => {
    if (closed) return;
    pending.push(event);
    if (!busy) void drain();
  };
  // A pub/sub message Redis dropped (or one sent while it restarted) and no event after it yet.
  const catchUp = (latestSeq: number) => {
    if (closed || busy || latestSeq <= head) return;
    busy = true;
    void fill(latestSeq)
      .catch(warn)
      .finally(() => {
        busy = false;
        if (pending.length > 0) void drain();
      });
  };

  const ready = (async () => {
    unsubscribe = await deps.bus.subscribe(sessionId, receive);
    // Subscribed first: an event appended from now on is either after this number or published after it.
    const [row] = await deps.store.sessions.eventSeqOfSessions([sessionId]);
    head = row?.eventSeq ?? 0;
    if (closed) unsubscribe();
    else unwatch = deps.sequences.watch(sessionId, catchUp);
    await drain();
  })();

  return {
    tenantId,
    sessionId,
    get head() {
      return head;
    },
    get windowStart() {
      return head - frames.length + 1;
    },
    ready,
    framesAfter(afterSeq, max) {
      const base = head - frames.length + 1;
      if (afterSeq + 1 < base) return null;
      const start = afterSeq + 1 - base;
      return frames.slice(start, start + max);
    },
    listen(onFrames) {
      listeners.add(onFrames);
      return () => listeners.delete(onFrames);
    },
    close() {
      closed = true;
      listeners.clear();
      frames = [];
      bytes = 0;
      pending = [];
      unsubscribe();
      unwatch();
    },
  };
}
