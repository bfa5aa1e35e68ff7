import type { Context } from "hono";
import type { ApiServices } from "./app-env.js";
import type { EventStreamSlot } from "./limits/event-stream-slots.js";
import { frameOf, type Frame, type SessionFeeds } from "./session-feed.js";
import type { SessionId, TenantId } from "../ids.js";

/**
 * SSE for one session (SPEC D5, X2). The stream starts after `afterSeq` (Last-Event-ID or
 * `?after=`), replays what it lacks from Postgres in pages, then copies frames from its session's
 * feed (src/api/session-feed.ts), which this process shares among every stream of the session:
 * one parse, one serialization and one gap fill per event, not one per stream. The stream only
 * keeps its own position (`lastSent`) and sends the frames after it, each once, in order.
 *
 * A client that reads slowly holds at most `backlog` frames here (and what the socket buffers);
 * the stream then stops copying and resumes where it was once the client has read, from the
 * feed's window or, if it fell out of it, from Postgres. Nobody else waits for it.
 *
 * Frames are written as bytes to the response body, with no per-frame encoding or stream
 * transform (hono's `writeSSE` cost more than the rest of the fan-out: docs/performance.md,
 * "Live events"). The stream holds one of its tenant's stream slots (SPEC S10) and renews it on
 * each keepalive; the client going away, or the server closing, frees it. Closing the stream
 * only stops sending: it never touches a run.
 */
export function streamSessionEvents(
  c: Context,
  services: Pick<ApiServices, "store" | "logger" | "metrics">,
  options: {
    tenantId: TenantId;
    sessionId: SessionId;
    afterSeq: number;
    keepaliveMs: number;
    slot: EventStreamSlot;
    feeds: SessionFeeds;
    /** Frames queued for this client at most before it waits for the client (default 256). */
    backlog?: number;
  },
): Response {
  const { tenantId, sessionId, slot } = options;
  const backlog = options.backlog ?? 256;
  const { feed, release } = options.feeds.acquire(tenantId, sessionId);
  let lastSent = options.afterSeq;
  let closed = false;
  let replaying = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let timer: NodeJS.Timeout | undefined;
  let unlisten: () => void = () => undefined;

  services.metrics.sseClients.inc();
  const end = () => {
    if (closed) return;
    closed = true;
    if (timer) clearInterval(timer);
    unlisten();
    release();
    slot.release();
    services.metrics.sseClients.dec();
  };
  const fail = (error: unknown) => {
    // A replay query failing ends this stream; the client resumes with Last-Event-ID; the operator hears of it.
    if (closed) return;
    services.logger.warn(
      { err: error, tenantId, sessionId, lastSent },
      "event stream ended by an error; the client resumes from its last event",
    );
    end();
    try {
      controller.close();
    } catch {}
  };
  const send = (frames: readonly Frame[]) => {
    const last = frames.at(-1);
    if (!last) return;
    // Moved first: enqueue can call `pull` (so `pump`) again before it returns.
    lastSent = last.seq;
    // Several frames go out as one chunk: one write, not one per event.
    controller.enqueue(frames.length === 1 ? (frames[0] as Frame).bytes : Buffer.concat(frames.map((frame) => frame.bytes)));
  };
  /** Copies what the feed has after `lastSent`, while the client keeps up; reads Postgres when the feed's window no longer has it. */
  const pump = () => {
    while (!closed && !replaying && lastSent < feed.head && (controller.desiredSize ?? 0) > 0) {
      const frames = feed.framesAfter(lastSent, Math.max(1, controller.desiredSize ?? 1));
      if (frames === null) {
        void replay();
        return;
      }
      send(frames);
    }
  };
  /** Events older than the feed's window, page by page from Postgres, then the feed again. */
  const replay = async () => {
    replaying = true;
    try {
      for (;;) {
        const windowStart = feed.windowStart;
        if (lastSent + 1 >= windowStart || closed) break;
        const page = await services.store.events.readEvents(tenantId, sessionId, lastSent, { limit: 500, upTo: windowStart - 1 });
        if (closed) return;
        const next = page.filter((event, i) => event.seq === lastSent + 1 + i);
        if (next.length === 0) break;
        send(next.map(frameOf));
        if ((controller.desiredSize ?? 0) <= 0) break;
      }
    } catch (error) {
      fail(error);
      return;
    } finally {
      replaying = false;
    }
    pump();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(streamController) {
        controller = streamController;
        feed.ready.then(
          () => {
            if (closed) return;
            unlisten = feed.listen(pump);
            pump();
          },
          (error: unknown) => fail(error),
        );
        timer = setInterval(() => {
          if (closed) return;
          slot.renew();
          controller.enqueue(keepalive);
        }, options.keepaliveMs);
      },
      // The client read what was queued: copy what came meanwhile.
      pull() {
        pump();
      },
      // The client went away (or the server is closing its connections).
      cancel() {
        end();
      },
    },
    { highWaterMark: backlog },
  );
  c.header("Content-Type", "text/event-stream");
  c.header("Cache-Control", "no-cache");
  c.header("Connection", "keep-alive");
  // Chunked: the Node adapter then sends the head at once instead of waiting for a first chunk.
  c.header("Transfer-Encoding", "chunked");
  return c.newResponse(body);
}

const keepalive = Buffer.from(": keepalive\n\n");
