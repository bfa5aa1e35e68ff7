import { cutRecording, recordedBody, startWireServer, type RecordedRequest, type RecordingCut } from "./wire-server.js";

/**
 * A fake model server speaking the OpenAI Chat Completions streaming wire format
 * over real HTTP, so adapter tests exercise fetch, TCP framing and SSE parsing
 * exactly as production does.
 */

/** What the server sends back for one request. */
export type WireScript =
  /** A plain (error) response, with headers of its own (`retry-after`, rate-limit headers). */
  | { status: number; body: string; headers?: Record<string, string> }
  /**
   * An SSE response. Objects are sent as `data: <json>\n\n`; strings and bytes are
   * written raw, so a test can send `data: [DONE]\n\n`, garbage, or one SSE frame
   * (even one UTF-8 character) split across writes. Each chunk is its own write.
   */
  | { chunks: Array<object | string | Uint8Array>; delayMs?: number; endDelayMs?: number };

export type WireRequest = RecordedRequest;

/** An SSE answer of these chunks, closed by `data: [DONE]` as OpenAI closes a stream. */
export const sseScript = (chunks: Array<object | string>): WireScript => ({ chunks: [...chunks, "data: [DONE]\n\n"] });

export interface OpenAIWireServer {
  /** Ends in `/v1`, like a real OpenAI-compatible base URL. */
  baseUrl: string;
  requests: WireRequest[];
  close(): Promise<void>;
}

export async function startOpenAIWireServer(
  handler: (request: Omit<WireRequest, "outcome">) => WireScript | Promise<WireScript>,
): Promise<OpenAIWireServer> {
  const wire = await startWireServer(async (request) => {
    const script = await handler(request);
    if ("status" in script) return script;
    const writes = script.chunks.map((chunk) =>
      typeof chunk === "string" || chunk instanceof Uint8Array ? chunk : `data: ${JSON.stringify(chunk)}\n\n`,
    );
    return {
      contentType: "text/event-stream",
      writes,
      ...(script.delayMs !== undefined ? { delayMs: script.delayMs } : {}),
      ...(script.endDelayMs !== undefined ? { endDelayMs: script.endDelayMs } : {}),
    };
  });
  return { baseUrl: `${wire.origin}/v1`, requests: wire.requests, close: wire.close };
}

/**
 * Replays a recorded stream (a file in test/fixtures/recorded) as the SSE body of a
 * response, byte for byte, cut into writes as `cut` says (default: one write per frame).
 */
export function recordedScript(name: string, options: { cut?: RecordingCut; delayMs?: number } = {}): WireScript {
  const chunks = cutRecording(recordedBody(name, "openai"), options.cut ?? "frames");
  return { chunks, ...(options.delayMs !== undefined ? { delayMs: options.delayMs } : {}) };
}

// ---------------------------------------------------------------------------
// Chunk builders, shaped like what api.openai.com sends.

const created = 1_700_000_000;

function completionChunk(delta: Record<string, unknown>, finishReason: string | null = null): object {
  return {
    id: "chatcmpl-wire-test",
    object: "chat.completion.chunk",
    created,
    model: "wire-test-model",
    system_fingerprint: "fp_wire_test",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

export function textChunk(text: string): object {
  return completionChunk({ content: text });
}

/** Reasoning text in a message field of the server's own (`reasoning_content` for DeepSeek and vLLM). */
export function reasoningChunk(text: string, field = "reasoning_content"): object {
  return completionChunk({ content: null, [field]: text });
}

/** First chunk of a tool call: carries id and name, and empty arguments, as OpenAI does. */
export function toolCallStartChunk(index: number, id: string, name: string): object {
  return completionChunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] });
}

export function toolArgsChunk(index: number, fragment: string): object {
  return completionChunk({ tool_calls: [{ index, function: { arguments: fragment } }] });
}

export function finishChunk(reason: string): object {
  return completionChunk({}, reason);
}

/** The `include_usage` chunk: sent last, with no choices; `cached` of the prompt tokens came from the prompt cache, as OpenAI reports it. */
export function usageChunk(prompt: number, completion: number, cached?: number): object {
  return {
    id: "chatcmpl-wire-test",
    object: "chat.completion.chunk",
    created,
    model: "wire-test-model",
    system_fingerprint: "fp_wire_test",
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      ...(cached !== undefined ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    },
  };
}
