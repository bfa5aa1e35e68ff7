import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A fake model server speaking the Anthropic Messages streaming wire format
 * over real HTTP (named SSE events, `data:` JSON with a repeated `type`), so
 * adapter tests exercise fetch, TCP framing and SSE parsing as production does.
 */

/** What the server sends back for one request. */
export type AnthropicScript =
  /** A plain (error) response. */
  | { status: number; body: string }
  /**
   * An SSE response. Objects with a `type` are sent as `event: <type>\ndata: <json>\n\n`
   * like the real API; strings and bytes are written raw (split frames, garbage).
   * Each chunk is its own write.
   */
  | { events: Array<AnthropicEvent | string | Uint8Array>; delayMs?: number };

export type AnthropicEvent = { type: string } & Record<string, unknown>;

export interface AnthropicWireRequest {
  method: string;
  url: string;
  // Tests assert on arbitrary paths of the JSON the adapter sent; typing it would only add casts.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  headers: IncomingHttpHeaders;
  /** Resolves when the response is over: "aborted" if the client closed the connection before the end. */
  outcome: Promise<"completed" | "aborted">;
}

export interface AnthropicWireServer {
  /** The server root, like `https://api.anthropic.com`; the API lives under `/v1/messages`. */
  baseUrl: string;
  requests: AnthropicWireRequest[];
  close(): Promise<void>;
}

export async function startAnthropicWireServer(
  handler: (request: Omit<AnthropicWireRequest, "outcome">) => AnthropicScript | Promise<AnthropicScript>,
): Promise<AnthropicWireServer> {
  const requests: AnthropicWireRequest[] = [];

  const server = createServer((req, res) => {
    let outcomeResolve: (outcome: "completed" | "aborted") => void = () => undefined;
    const outcome = new Promise<"completed" | "aborted">((resolve) => (outcomeResolve = resolve));
    // "close" fires both after a normal end and when the client goes away; only the latter leaves it unfinished.
    res.on("close", () => outcomeResolve(res.writableFinished ? "completed" : "aborted"));

    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      void (async () => {
        const text = Buffer.concat(parts).toString("utf8");
        const request = { method: req.method ?? "", url: req.url ?? "", body: text ? JSON.parse(text) : undefined, headers: req.headers };
        requests.push({ ...request, outcome });
        // Only the Messages endpoint exists, as on the real server.
        const script: AnthropicScript =
          request.method === "POST" && request.url === "/v1/messages"
            ? await handler(request)
            : { status: 404, body: JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no route ${request.url}` } }) };
        await respond(res, script);
      })().catch((error: unknown) => {
        // A broken test handler should fail loudly, not hang the client.
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`wire server handler failed: ${String(error)}`);
      });
    });
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  // Memoized so a test may close early (e.g. to get a refused connection) and the cleanup hook again.
  let closing: Promise<void> | undefined;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        // fetch keeps connections alive; without this close() would wait for them to time out.
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      })),
  };
}

async function respond(res: ServerResponse, script: AnthropicScript): Promise<void> {
  if ("status" in script) {
    res.writeHead(script.status, { "content-type": "application/json" });
    res.end(script.body);
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
  for (const [i, event] of script.events.entries()) {
    if (i > 0 && script.delayMs) await pause(res, script.delayMs);
    // The client went away (abort test): stop like a real server would.
    if (res.destroyed) return;
    res.write(typeof event === "string" || event instanceof Uint8Array ? event : sseFrame(event));
  }
  res.end();
}

export function sseFrame(event: AnthropicEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Waits between writes, cut short when the connection closes so aborted tests end promptly. */
function pause(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on("close", done);
  });
}

// ---------------------------------------------------------------------------
// Event builders, shaped like what api.anthropic.com sends.

export interface StartUsage {
  input: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export function messageStart(usage: StartUsage = { input: 10 }): AnthropicEvent {
  return {
    type: "message_start",
    message: {
      id: "msg_wire_test",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-wire-test",
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        cache_creation_input_tokens: usage.cacheWrite ?? 0,
        cache_read_input_tokens: usage.cacheRead ?? 0,
        output_tokens: 1,
      },
    },
  };
}

export function textStart(index: number, text = ""): AnthropicEvent {
  return { type: "content_block_start", index, content_block: { type: "text", text } };
}

export function textDelta(index: number, text: string): AnthropicEvent {
  return { type: "content_block_delta", index, delta: { type: "text_delta", text } };
}

export function toolUseStart(index: number, id: string, name: string): AnthropicEvent {
  return { type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } };
}

export function inputJsonDelta(index: number, partialJson: string): AnthropicEvent {
  return { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: partialJson } };
}

export function blockStop(index: number): AnthropicEvent {
  return { type: "content_block_stop", index };
}

export function messageDelta(stopReason: string, outputTokens: number): AnthropicEvent {
  return { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } };
}

export const ping: AnthropicEvent = { type: "ping" };
export const messageStop: AnthropicEvent = { type: "message_stop" };

export function errorEvent(type: string, message: string): AnthropicEvent {
  return { type: "error", error: { type, message } };
}

/** A whole text answer: start, blocks, stop reason, stop. */
export function textResponse(text: string, options: { usage?: StartUsage; outputTokens?: number; stopReason?: string } = {}): AnthropicEvent[] {
  return [
    messageStart(options.usage),
    textStart(0),
    textDelta(0, text),
    blockStop(0),
    messageDelta(options.stopReason ?? "end_turn", options.outputTokens ?? 5),
    messageStop,
  ];
}
