import { createParser } from "eventsource-parser";

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: any;
}

/**
 * A real SSE client over HTTP. Reads until `until` says stop (or the server
 * ends the stream), then drops the connection, like a browser tab closing.
 */
export async function readSse(
  url: string,
  key: string,
  options: { lastEventId?: number; until: (event: SseEvent, all: SseEvent[]) => boolean; timeoutMs?: number },
): Promise<SseEvent[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("sse read timed out")), options.timeoutMs ?? 20_000);
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: "text/event-stream" };
  if (options.lastEventId !== undefined) headers["last-event-id"] = String(options.lastEventId);
  const events: SseEvent[] = [];
  let done = false;
  const parser = createParser({
    onEvent(message) {
      if (done) return;
      const event = { id: message.id, event: message.event, data: JSON.parse(message.data) };
      events.push(event);
      if (options.until(event, events)) done = true;
    },
  });
  try {
    const response = await fetch(url, { headers, signal: controller.signal });
    if (response.status !== 200 || !response.body) throw new Error(`SSE answered ${response.status}`);
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      if (done) break;
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  if (!done) throw new Error("SSE stream ended before the expected event");
  return events;
}
