import { createParser } from "eventsource-parser";
import type { FoyaEvent } from "./events.js";
import { FoyaApiError } from "./foya-api-error.js";
import type { Transport } from "./client-options.js";

/** What one connection reports besides its events. */
export interface ConnectionCallbacks {
  /** Bytes arrived (events or keepalives): the connection is alive. */
  onBytes(): void;
  /** The server's `retry:` field, in milliseconds. */
  onRetry(ms: number): void;
}

/**
 * One SSE connection to a session's events, over `fetch` so the key travels in a header:
 * starts after `afterSeq` (`Last-Event-ID`), yields each complete event, and ends when the
 * server closes. A non-2xx answer throws a `FoyaApiError`; a connection that fails throws what
 * `fetch` or the body threw. Returning early (or an abort of `signal`) closes the connection.
 */
export async function* readEventConnection(
  transport: Transport,
  sessionId: string,
  afterSeq: number,
  callbacks: ConnectionCallbacks,
  signal?: AbortSignal,
): AsyncGenerator<FoyaEvent, void, undefined> {
  const connection = new AbortController();
  const abort = () => connection.abort(signal?.reason);
  signal?.addEventListener("abort", abort, { once: true });
  try {
    const url = `${transport.baseUrl}/v1/sessions/${encodeURIComponent(sessionId)}/events?after=${afterSeq}`;
    const headers = { ...transport.headers, accept: "text/event-stream", "last-event-id": String(afterSeq) };
    const response = await transport.fetch(new Request(url, { headers, signal: connection.signal }));
    if (!response.ok || !response.body) throw await FoyaApiError.fromResponse(response);

    const parsed: FoyaEvent[] = [];
    const parser = createParser({
      onEvent(message) {
        parsed.push(parseEvent(response, message.data));
      },
      onRetry: callbacks.onRetry,
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        callbacks.onBytes();
        parser.feed(decoder.decode(value, { stream: true }));
        while (parsed.length > 0) yield parsed.shift() as FoyaEvent;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  } finally {
    signal?.removeEventListener("abort", abort);
    connection.abort();
  }
}

function parseEvent(response: Response, data: string): FoyaEvent {
  try {
    const event = JSON.parse(data) as FoyaEvent;
    if (typeof event.seq === "number" && typeof event.type === "string") return event;
  } catch {
    // Reported below.
  }
  throw new FoyaApiError({
    status: response.status,
    code: "malformed_event",
    message: `the event stream sent a frame that is not an event: ${data.slice(0, 200)}`,
  });
}
