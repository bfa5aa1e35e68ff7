/**
 * A `fetch` for the SDK that breaks event streams on purpose: the n-th event-stream response
 * (counted from 0) whose entry in `cuts` is a number passes that many events, then half of the
 * next event's frame, then fails like a dropped connection; the real connection is closed.
 * `rewrite` may change an event-stream request before it is sent (a server that replays).
 */
export interface CuttingFetch {
  fetch: (request: Request) => Promise<Response>;
  /** Every event-stream request, as sent. */
  streamRequests: Request[];
  /** Connections cut so far. */
  readonly cuts: number;
  /** When each cut happened (Date.now()). */
  cutTimes: number[];
}

export function cuttingFetch(options: {
  cuts: Array<number | undefined>;
  rewrite?: (request: Request, index: number) => Request;
}): CuttingFetch {
  const streamRequests: Request[] = [];
  const cutTimes: number[] = [];
  let cuts = 0;
  return {
    streamRequests,
    cutTimes,
    get cuts() {
      return cuts;
    },
    async fetch(request) {
      if (!(request.headers.get("accept") ?? "").includes("text/event-stream")) return globalThis.fetch(request);
      const index = streamRequests.length;
      const sent = options.rewrite ? options.rewrite(request, index) : request;
      streamRequests.push(sent);
      const response = await globalThis.fetch(sent);
      const passEvents = options.cuts[index];
      if (passEvents === undefined || !response.body) return response;
      const body = cutAfterEvents(response.body, passEvents, () => {
        cuts++;
        cutTimes.push(Date.now());
      });
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    },
  };
}

function cutAfterEvents(body: ReadableStream<Uint8Array>, passEvents: number, onCut: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = "";
  let passed = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      pending += decoder.decode(value, { stream: true });
      for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
        const frame = pending.slice(0, end + 2);
        // Comments (keepalives) pass; frames with data are events.
        if (frame.includes("data:")) {
          if (passed === passEvents) {
            controller.enqueue(encoder.encode(frame.slice(0, Math.floor(frame.length / 2))));
            onCut();
            await reader.cancel();
            controller.error(new TypeError("the test cut the connection"));
            return;
          }
          passed++;
        }
        controller.enqueue(encoder.encode(frame));
        pending = pending.slice(end + 2);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
