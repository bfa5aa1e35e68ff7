import { cutRecording, recordedBody, startWireServer, type RecordedRequest, type RecordingCut } from "./wire-server.js";

/**
 * A fake model server speaking the Anthropic Messages streaming wire format
 * over real HTTP (named SSE events, `data:` JSON with a repeated `type`), so
 * adapter tests exercise fetch, TCP framing and SSE parsing as production does.
 */

/** What the server sends back for one request. */
export type AnthropicScript =
  /** A plain (error) response, with headers of its own (`retry-after`, rate-limit headers). */
  | { status: number; body: string; headers?: Record<string, string> }
  /**
   * An SSE response. Objects with a `type` are sent as `event: <type>\ndata: <json>\n\n`
   * like the real API; strings and bytes are written raw (split frames, garbage).
   * Each chunk is its own write.
   */
  | { events: Array<AnthropicEvent | string | Uint8Array>; delayMs?: number };

export type AnthropicEvent = { type: string } & Record<string, unknown>;

export type AnthropicWireRequest = RecordedRequest;

export interface AnthropicWireServer {
  /** The server root, like `https://api.anthropic.com`; the API lives under `/v1/messages`. */
  baseUrl: string;
  requests: AnthropicWireRequest[];
  close(): Promise<void>;
}

export async function startAnthropicWireServer(
  handler: (request: Omit<AnthropicWireRequest, "outcome">) => AnthropicScript | Promise<AnthropicScript>,
): Promise<AnthropicWireServer> {
  const wire = await startWireServer(async (request) => {
    // Only the Messages endpoint exists, as on the real server.
    if (request.method !== "POST" || request.url !== "/v1/messages") {
      return {
        status: 404,
        body: JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no route ${request.url}` } }),
      };
    }
    const script = await handler(request);
    if ("status" in script) return script;
    const writes = script.events.map((event) => (typeof event === "string" || event instanceof Uint8Array ? event : sseFrame(event)));
    return {
      contentType: "text/event-stream; charset=utf-8",
      writes,
      ...(script.delayMs !== undefined ? { delayMs: script.delayMs } : {}),
    };
  });
  return { baseUrl: wire.origin, requests: wire.requests, close: wire.close };
}

export function sseFrame(event: AnthropicEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Replays a recorded stream (a file in test/fixtures/recorded) as the SSE body of a
 * response, byte for byte, cut into writes as `cut` says (default: one write per frame).
 */
export function recordedScript(name: string, options: { cut?: RecordingCut; delayMs?: number } = {}): AnthropicScript {
  const events = cutRecording(recordedBody(name, "anthropic"), options.cut ?? "frames");
  return { events, ...(options.delayMs !== undefined ? { delayMs: options.delayMs } : {}) };
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

/** A `thinking` block's start, as the API sends it: empty text and signature, filled by deltas. */
export function thinkingStart(index: number): AnthropicEvent {
  return { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } };
}

export function thinkingDelta(index: number, thinking: string): AnthropicEvent {
  return { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking } };
}

export function signatureDelta(index: number, signature: string): AnthropicEvent {
  return { type: "content_block_delta", index, delta: { type: "signature_delta", signature } };
}

/** A `redacted_thinking` block comes whole in its start: encrypted data, no deltas. */
export function redactedThinkingStart(index: number, data: string): AnthropicEvent {
  return { type: "content_block_start", index, content_block: { type: "redacted_thinking", data } };
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
export function textResponse(
  text: string,
  options: { usage?: StartUsage; outputTokens?: number; stopReason?: string } = {},
): AnthropicEvent[] {
  return [
    messageStart(options.usage),
    textStart(0),
    textDelta(0, text),
    blockStop(0),
    messageDelta(options.stopReason ?? "end_turn", options.outputTokens ?? 5),
    messageStop,
  ];
}
