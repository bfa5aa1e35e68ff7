import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { SessionEvent } from "../core/events.js";
import type { ApiServices } from "./app-env.js";
import type { EventStreamSlot } from "./limits/event-stream-slots.js";
import type { SessionSequenceWatch } from "./session-sequence-watch.js";
import type { SessionId, TenantId } from "../ids.js";

/**
 * SSE for one session (SPEC D5, X2). Subscribes first, then replays from
 * Postgres, then forwards live events; an event that arrives ahead of the
 * last one sent triggers a gap fill from Postgres, and one already sent is
 * dropped, so each event reaches the client once, in order. Pub/sub messages
 * Redis dropped are caught up when the process's sequence watch sees the
 * session ahead of the stream, so an idle stream costs no query per keepalive.
 * The stream holds one of its tenant's stream slots (SPEC S10) and renews it on
 * each keepalive; ending the stream, or the client going away, frees it.
 * Closing the stream only unsubscribes: it never touches a run.
 */
export function streamSessionEvents(
  c: Context,
  services: Pick<ApiServices, "store" | "bus" | "logger" | "metrics">,
  options: {
    tenantId: TenantId;
    sessionId: SessionId;
    afterSeq: number;
    keepaliveMs: number;
    slot: EventStreamSlot;
    sequences: SessionSequenceWatch;
  },
): Response {
  const { slot } = options;
  return streamSSE(c, async (stream) => {
    const { tenantId, sessionId } = options;
    let lastSent = options.afterSeq;
    let closed = false;
    let chain: Promise<void> = Promise.resolve();

    const write = async (event: SessionEvent) => {
      await stream.writeSSE({ id: String(event.seq), event: event.type, data: JSON.stringify(event) });
      lastSent = event.seq;
    };
    const catchUp = async (upTo?: number) => {
      for (;;) {
        const batch = await services.store.events.readEvents(tenantId, sessionId, lastSent, {
          limit: 500,
          ...(upTo !== undefined ? { upTo } : {}),
        });
        for (const event of batch) await write(event);
        if (batch.length < 500) return;
      }
    };
    const deliver = async (event: SessionEvent) => {
      if (event.seq <= lastSent) return;
      if (event.seq > lastSent + 1) await catchUp(event.seq - 1);
      if (event.seq === lastSent + 1) await write(event);
    };
    const enqueue = (work: () => Promise<void>) => {
      chain = chain
        .then(() => (closed ? undefined : work()))
        .catch((error: unknown) => {
          // A client that went away fails its writes: that is how streams end. Anything else (a catch-up
          // query failing) ends this stream too, and the client resumes with Last-Event-ID; the operator hears of it.
          if (!closed && !stream.aborted)
            services.logger.warn(
              { err: error, tenantId, sessionId, lastSent },
              "event stream ended by an error; the client resumes from its last event",
            );
          closed = true;
        });
    };

    let unsubscribe: () => void = () => undefined;
    let unwatch: () => void = () => undefined;
    let counted = true;
    services.metrics.sseClients.inc();
    const end = () => {
      closed = true;
      unsubscribe();
      unwatch();
      slot.release();
      if (counted) services.metrics.sseClients.dec();
      counted = false;
    };
    stream.onAbort(end);
    try {
      unsubscribe = await services.bus.subscribe(sessionId, (event) => enqueue(() => deliver(event)));
      enqueue(() => catchUp());
      unwatch = options.sequences.watch(sessionId, (latestSeq) => {
        if (latestSeq > lastSent) enqueue(() => catchUp(latestSeq));
      });
      while (!closed && !stream.aborted) {
        await stream.sleep(options.keepaliveMs);
        if (closed || stream.aborted) break;
        slot.renew();
        enqueue(() => stream.write(": keepalive\n\n").then(() => undefined));
      }
    } finally {
      end();
    }
  });
}
