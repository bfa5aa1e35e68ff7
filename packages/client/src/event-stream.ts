import type { ReconnectOptions, Transport } from "./client-options.js";
import { delay } from "./delay.js";
import type { FoyaEvent } from "./events.js";
import { isFoyaApiError } from "./foya-api-error.js";
import { readEventConnection } from "./sse-connection.js";

/** How a stream reconnects after its connection is lost, the server answers 429 or 5xx, or it ends the stream. */
export interface EventStreamOptions {
  /** Yield events after this sequence number; 0 (the default) replays the session from its first event. */
  after?: number;
  /** Ends the stream: the iterator throws the signal's reason and the connection is closed. */
  signal?: AbortSignal;
  /** Ends the stream after the first event it answers true for (that event is yielded). */
  until?: (event: FoyaEvent) => boolean;
  /** Overrides the client's reconnect options for this stream. */
  reconnect?: ReconnectOptions;
}

/** Answers worth trying again: the rest (400, 401, 403, 404) will not change by waiting. */
const retryableStatuses = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * A session's events, in order, each exactly once, for as long as the consumer reads (SPEC E1, D5).
 * A lost connection is reopened with `Last-Event-ID` set to the last event yielded, so the
 * server replays exactly what was missed; an event at or below it (a server or proxy that
 * replays more) is dropped. Breaking out of the loop closes the connection.
 */
export async function* streamSessionEvents(
  transport: Transport,
  sessionId: string,
  options: EventStreamOptions = {},
): AsyncGenerator<FoyaEvent, void, undefined> {
  const { signal, until } = options;
  const reconnect = { ...transport.reconnect, ...options.reconnect };
  let initialDelayMs = reconnect.initialDelayMs ?? 250;
  const maxDelayMs = reconnect.maxDelayMs ?? 5_000;
  const maxAttempts = reconnect.maxAttempts ?? Number.POSITIVE_INFINITY;
  let lastSeq = options.after ?? 0;
  let failures = 0;
  const callbacks = {
    onBytes: () => {
      failures = 0;
    },
    onRetry: (ms: number) => {
      initialDelayMs = ms;
    },
  };

  for (;;) {
    signal?.throwIfAborted();
    let lastError: unknown = new Error("the server ended the event stream");
    const connection = readEventConnection(transport, sessionId, lastSeq, callbacks, signal);
    try {
      for (;;) {
        let step: IteratorResult<FoyaEvent>;
        try {
          step = await connection.next();
        } catch (error) {
          if (signal?.aborted) throw signal.reason;
          if (isFoyaApiError(error) && !retryableStatuses.has(error.status)) throw error;
          lastError = error;
          break;
        }
        if (step.done) break;
        const event = step.value;
        if (event.seq <= lastSeq) continue;
        lastSeq = event.seq;
        yield event;
        if (until?.(event)) return;
      }
    } finally {
      await connection.return();
    }
    failures++;
    if (failures >= maxAttempts) throw lastError;
    const retryAfterMs =
      isFoyaApiError(lastError) && lastError.retryAfterSeconds !== undefined ? lastError.retryAfterSeconds * 1000 : undefined;
    await delay(retryAfterMs ?? Math.min(maxDelayMs, initialDelayMs * 2 ** (failures - 1)), signal);
  }
}
