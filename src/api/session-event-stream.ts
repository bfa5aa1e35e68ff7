import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { SessionEvent } from "../core/events.js";
import { readEvents } from "../events/event-store.js";
import type { ApiServices } from "./app-env.js";

/**
 * SSE for one session (SPEC D5, X2). Subscribes first, then replays from
 * Postgres, then forwards live events; an event that arrives ahead of the
 * last one sent triggers a gap fill from Postgres, and one already sent is
 * dropped, so each event reaches the client once, in order. A periodic
 * catch-up covers pub/sub messages Redis dropped. Closing the stream only
 * unsubscribes: it never touches a run.
 */
export function streamSessionEvents(
  c: Context,
  services: Pick<ApiServices, "db" | "bus">,
  options: { tenantId: string; sessionId: string; afterSeq: number; keepaliveMs: number },
): Response {
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
        const batch = await readEvents(services.db.db, tenantId, sessionId, lastSent, { limit: 500, ...(upTo !== undefined ? { upTo } : {}) });
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
      chain = chain.then(() => (closed ? undefined : work())).catch(() => {
        closed = true;
      });
    };

    const unsubscribe = await services.bus.subscribe(sessionId, (event) => enqueue(() => deliver(event)));
    stream.onAbort(() => {
      closed = true;
      unsubscribe();
    });
    enqueue(() => catchUp());
    try {
      while (!closed && !stream.aborted) {
        await stream.sleep(options.keepaliveMs);
        if (closed || stream.aborted) break;
        enqueue(async () => {
          await stream.write(": keepalive\n\n");
          await catchUp();
        });
      }
    } finally {
      closed = true;
      unsubscribe();
    }
  });
}
