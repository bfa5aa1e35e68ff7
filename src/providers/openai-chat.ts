import { EventSourceParserStream } from "eventsource-parser/stream";
import { FoyaError } from "../errors.js";
import type {
  FinishReason,
  ModelProvider,
  ProviderRequest,
  ProviderStreamPart,
  RequestMessage,
  RequestResultPart,
  Usage,
} from "./provider.js";
import { toOpenAITools, type OpenAIFunctionTool } from "./render-tool-schemas.js";
import { asNumber, asRecord, asString } from "./wire-fields.js";
import { postStream, releaseBody } from "./post-stream.js";

/**
 * Adapter for OpenAI-compatible Chat Completions servers (OpenAI, LM Studio,
 * llama.cpp, vLLM, Ollama...). It speaks only the streaming wire format, so a
 * step sees text and tool calls as they are produced.
 *
 * Reasoning (SPEC PR5): servers that stream it put it in a message field of their own
 * (`reasoning_content`: DeepSeek, vLLM; `reasoning`: OpenRouter, Ollama). Its text streams as
 * reasoning deltas and is kept under the same field, then sent back in it on the assistant
 * message: DeepSeek refuses a tool-call continuation without it. Chat Completions proper has no
 * such field, so nothing is sent to a server that never sent one.
 */

export interface OpenAIChatProviderOptions {
  profile: string;
  /** Base URL including the version prefix, e.g. `http://127.0.0.1:1234/v1`. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** Deadline for the whole response, headers to last chunk. */
  timeoutMs?: number;
  /** The profile's pooled fetch (provider-http.ts), or a test's; defaults to the global fetch. */
  fetch?: typeof fetch;
}

/** Local models can take minutes for one long answer; a deadline still stops a hung server. */
const defaultTimeoutMs = 10 * 60 * 1000;
/** Enough of an error body to diagnose, short enough for a log line. */
const errorExcerptLength = 300;

/** The message fields servers stream reasoning in; only these are kept and sent back. */
const reasoningFields = ["reasoning_content", "reasoning"] as const;
type ReasoningField = (typeof reasoningFields)[number];

export function createOpenAIChatProvider(options: OpenAIChatProviderOptions): ModelProvider {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const fetchFn = options.fetch ?? fetch;

  return {
    profile: options.profile,
    defaultModel: options.model,
    stream(request: ProviderRequest, signal: AbortSignal): AsyncGenerator<ProviderStreamPart> {
      const headers: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
      return postStream(
        { profile: options.profile, fetch: fetchFn, url, headers, body: toWireRequest(request, options.model), timeoutMs, signal },
        parseStream,
      );
    },
  };
}

// ---------------------------------------------------------------------------
// Request mapping

type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | WireUserPart[] }
  | ({ role: "assistant"; content: string | null; tool_calls?: WireToolCall[] } & Partial<Record<ReasoningField, string>>)
  | { role: "tool"; tool_call_id: string; content: string };

type WireUserPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

interface WireRequest {
  model: string;
  stream: true;
  stream_options: { include_usage: true };
  parallel_tool_calls?: false;
  tools?: readonly OpenAIFunctionTool[];
  messages: WireMessage[];
}

function toWireRequest(request: ProviderRequest, defaultModel: string): WireRequest {
  const messages: WireMessage[] = [];
  if (request.system) messages.push({ role: "system", content: request.system });
  // Tool messages of this API carry text only: the images of a turn's tool results follow
  // its tool messages in one user message, each introduced by the call it belongs to.
  let turnImages: WireUserPart[] = [];
  const flushImages = () => {
    if (turnImages.length > 0) messages.push({ role: "user", content: turnImages });
    turnImages = [];
  };
  for (const message of request.messages) {
    if (message.role !== "tool") flushImages();
    messages.push(toWireMessage(message));
    if (message.role === "tool") turnImages.push(...toolImageParts(message));
  }
  flushImages();
  const hasTools = request.tools.length > 0;
  // Servers cache a prompt's prefix on their own (OpenAI's automatic caching): tools go before
  // the messages, so the body of one step, up to its last message, is a byte prefix of the next's (PR4).
  return {
    model: request.model || defaultModel,
    stream: true,
    stream_options: { include_usage: true },
    // Only the refusal is sent: servers that do not know the flag keep their default.
    ...(hasTools && request.parallelToolCalls === false ? { parallel_tool_calls: false } : {}),
    // Some servers reject an empty tools array, so the key is left out instead.
    ...(hasTools ? { tools: toOpenAITools(request.tools) } : {}),
    messages,
  };
}

function toWireMessage(message: RequestMessage): WireMessage {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.text };
    case "assistant": {
      const wire: WireMessage = { role: "assistant", content: message.text || null };
      // Only what this format made; an Anthropic thinking block means nothing here and is left out.
      for (const block of message.reasoning ?? []) {
        if (block.format === "openai-chat" && isReasoningField(block.field)) wire[block.field] = block.text;
      }
      if (message.toolCalls.length > 0) {
        wire.tool_calls = message.toolCalls.map((call) => ({
          id: call.callId,
          type: "function",
          // argumentsRaw goes back verbatim (SPEC T2): the model sees exactly what it wrote.
          function: { name: call.name, arguments: call.argumentsRaw },
        }));
      }
      return wire;
    }
    case "tool":
      return { role: "tool", tool_call_id: message.callId, content: message.content.map(resultPartText).join("\n") };
  }
}

/** Chat Completions tool messages are text only; an image is named where it was, and sent in the user message after the turn's tool messages. */
function resultPartText(part: RequestResultPart): string {
  return part.type === "text" ? part.text : `[image (${part.mediaType}): attached in the next user message]`;
}

/** The images of one tool result as user-message parts, after a line naming their call. */
function toolImageParts(message: Extract<RequestMessage, { role: "tool" }>): WireUserPart[] {
  const images = message.content.filter((part) => part.type === "image");
  if (images.length === 0) return [];
  const noun = images.length === 1 ? "image" : `${images.length} images`;
  return [
    { type: "text", text: `The ${noun} returned by tool call ${message.callId} (${message.name}):` },
    ...images.map(
      (image): WireUserPart => ({ type: "image_url", image_url: { url: `data:${image.mediaType};base64,${image.dataBase64}` } }),
    ),
  ];
}

// ---------------------------------------------------------------------------
// Response parsing

/** What is known about one tool call while its chunks arrive. */
interface ToolCallState {
  /** Position in the response, 0-based in order of first appearance. */
  index: number;
  id: string;
  name: string;
  started: boolean;
  /** Argument text received before the start could be emitted. */
  pendingArguments: string;
}

async function* parseStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ProviderStreamPart> {
  const reader = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  // Keyed by the wire index, which servers may not number from 0.
  const toolCalls = new Map<number, ToolCallState>();
  // The raw value is kept beside the normalized one (stored per step as stop_reason).
  let finish: { reason: FinishReason; stopReason: string } | undefined;
  let usage: Usage | undefined;
  // By field, in the order they first came; an empty field is kept too (DeepSeek wants it back even so).
  const reasoning = new Map<ReasoningField, string>();
  let lastEventSeen = false;
  try {
    for (;;) {
      const { done, value: event } = await reader.read();
      if (done || event.data === "[DONE]") {
        lastEventSeen = true;
        break;
      }
      const chunk = parseChunk(event.data);

      const error = asRecord(chunk.error);
      if (error) throw new FoyaError("provider_error", asString(error.message) ?? JSON.stringify(error));

      // With include_usage the usage arrives in a final chunk whose `choices` is empty.
      const wireUsage = asRecord(chunk.usage);
      if (wireUsage) usage = toUsage(wireUsage);

      const choice = Array.isArray(chunk.choices) ? asRecord(chunk.choices[0]) : undefined;
      if (!choice) continue;
      const delta = asRecord(choice.delta);
      if (delta) yield* applyReasoningDelta(reasoning, delta);
      const content = asString(delta?.content);
      if (content) yield { type: "text-delta", text: content };
      if (Array.isArray(delta?.tool_calls)) {
        for (const item of delta.tool_calls) yield* applyToolCallDelta(toolCalls, item);
      }
      const reason = asString(choice.finish_reason);
      if (reason) finish = { reason: mapFinishReason(reason), stopReason: reason };
    }
    // The finish reason is required; the [DONE] line is not (some servers just close).
    if (!finish) throw new FoyaError("provider_error", "stream ended without a finish reason");
    for (const call of toolCalls.values()) {
      if (!call.started) yield* startToolCall(call);
    }
    for (const [field, text] of reasoning) yield { type: "reasoning-block", block: { format: "openai-chat", field, text } };
    yield { type: "finish", ...finish, ...(usage ? { usage } : {}) };
  } finally {
    await releaseBody(reader, lastEventSeen);
  }
}

function isReasoningField(field: string): field is ReasoningField {
  return (reasoningFields as readonly string[]).includes(field);
}

/**
 * Keeps the reasoning fields of one delta. Only the first field a server uses is streamed: some
 * send the same text under both names, which clients should not see twice.
 */
function* applyReasoningDelta(reasoning: Map<ReasoningField, string>, delta: Record<string, unknown>): Generator<ProviderStreamPart> {
  for (const field of reasoningFields) {
    const text = asString(delta[field]);
    if (text === undefined) continue;
    reasoning.set(field, (reasoning.get(field) ?? "") + text);
    if (text && reasoning.keys().next().value === field) yield { type: "reasoning-delta", text };
  }
}

/**
 * Applies one `delta.tool_calls[]` item. The start is emitted once the id and name
 * are known and argument text begins (the `arguments` key, even empty, marks the
 * name as complete); servers that send the name in pieces send them before that.
 * Argument fragments are passed on exactly as received (SPEC T2).
 */
function* applyToolCallDelta(toolCalls: Map<number, ToolCallState>, item: unknown): Generator<ProviderStreamPart> {
  const wire = asRecord(item);
  const wireIndex = asNumber(wire?.index);
  if (!wire || wireIndex === undefined) throw new FoyaError("provider_error", "tool call delta without an index");
  let call = toolCalls.get(wireIndex);
  if (!call) {
    call = { index: toolCalls.size, id: "", name: "", started: false, pendingArguments: "" };
    toolCalls.set(wireIndex, call);
  }
  const fn = asRecord(wire.function);
  const fragment = asString(fn?.arguments);
  if (call.started) {
    // Names or ids repeated after the start cannot change what was announced.
    if (fragment) yield { type: "tool-call-delta", index: call.index, argumentsDelta: fragment };
    return;
  }
  call.id ||= asString(wire.id) ?? "";
  call.name += asString(fn?.name) ?? "";
  if (fragment === undefined) return;
  call.pendingArguments += fragment;
  if (call.id && call.name) yield* startToolCall(call);
}

/** Emits the start and any argument text buffered while the id or name was missing. */
function* startToolCall(call: ToolCallState): Generator<ProviderStreamPart> {
  if (!call.id || !call.name) {
    throw new FoyaError("provider_error", `tool call ${call.index} has no ${call.id ? "name" : "id"}`);
  }
  call.started = true;
  yield { type: "tool-call-start", index: call.index, id: call.id, name: call.name };
  if (call.pendingArguments) {
    yield { type: "tool-call-delta", index: call.index, argumentsDelta: call.pendingArguments };
    call.pendingArguments = "";
  }
}

function parseChunk(data: string): Record<string, unknown> {
  const excerpt = data.slice(0, errorExcerptLength);
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch (error) {
    throw new FoyaError("provider_error", `unparseable stream chunk: ${excerpt}`, { cause: error });
  }
  const chunk = asRecord(parsed);
  if (!chunk) throw new FoyaError("provider_error", `stream chunk is not an object: ${excerpt}`);
  return chunk;
}

/** `prompt_tokens` already counts cached tokens; servers with a prompt cache say how many in the details. */
function toUsage(wire: Record<string, unknown>): Usage {
  const usage: Usage = {
    inputTokens: asNumber(wire.prompt_tokens) ?? 0,
    outputTokens: asNumber(wire.completion_tokens) ?? 0,
  };
  const cached = asNumber(asRecord(wire.prompt_tokens_details)?.cached_tokens);
  if (cached !== undefined) usage.cacheReadTokens = cached;
  return usage;
}

function mapFinishReason(reason: string): FinishReason {
  switch (reason) {
    case "stop":
    case "tool_calls":
    case "length":
    case "content_filter":
      return reason;
    default:
      return "other";
  }
}
