/**
 * Bounds what an HTTP MCP server can make a worker hold (SPEC M3, O1): without a bound, three
 * 450 MiB results took a worker from 0.2 to 3.9 GB. The response body is counted as it streams:
 * a JSON (or any other) body as a whole, an event stream per event (one event is one message; the
 * stream itself may stay open for days). Past `maxBytes` the body errors, its source is cancelled
 * (the server's connection closes) and `onTooLarge` is told what was too large ("a response
 * body", "an event"), before more is read.
 */
export function boundResponse(response: Response, maxBytes: number, onTooLarge: (what: string) => void): Response {
  if (response.body === null) return response;
  const perEvent = (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
  const counter = perEvent ? eventSizeCounter() : bodySizeCounter();
  const what = perEvent ? "an event" : "a response body";
  const bounded = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (counter(chunk) <= maxBytes) return controller.enqueue(chunk);
        onTooLarge(what);
        controller.error(new Error(`the server sent ${what} larger than ${maxBytes} bytes`));
      },
    }),
  );
  return new Response(bounded, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** The body's bytes so far. */
function bodySizeCounter(): (chunk: Uint8Array) => number {
  let total = 0;
  return (chunk) => {
    total += chunk.byteLength;
    return total;
  };
}

const lf = 10;
const cr = 13;

/**
 * The size in bytes of the largest event in the chunk, the event still open included: an event
 * ends at a blank line (two line ends in a row; CRLF, LF and CR each end a line, as in the
 * event-stream format). One pass over each byte.
 */
function eventSizeCounter(): (chunk: Uint8Array) => number {
  let open = 0;
  let atLineStart = true;
  let afterCr = false;
  return (chunk) => {
    let largest = 0;
    let eventStart = 0;
    for (let index = 0; index < chunk.length; index++) {
      const byte = chunk[index];
      const crlf = byte === lf && afterCr;
      afterCr = byte === cr;
      if (crlf) continue;
      if (byte !== lf && byte !== cr) {
        atLineStart = false;
        continue;
      }
      if (atLineStart) {
        largest = Math.max(largest, open + index + 1 - eventStart);
        open = 0;
        eventStart = index + 1;
      }
      atLineStart = true;
    }
    open += chunk.length - eventStart;
    return Math.max(largest, open);
  };
}
