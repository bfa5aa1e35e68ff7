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
import { toAnthropicTools, type AnthropicTool } from "./render-tool-schemas.js";
import { asNumber, asRecord, asString } from "./wire-fields.js";
import { postStream, releaseBody } from "./post-stream.js";
import { markCacheBreakpoints, type CacheMark } from "./anthropic-cache-breakpoints.js";
import {
  applyThinkingDelta,
  endThinking,
  startThinking,
  thinkingParameter,
  wireThinkingBlocks,
  type ThinkingOptions,
  type ThinkingState,
  type WireThinkingBlock,
} from "./anthropic-thinking.js";

/**
 * Adapter for the Anthropic Messages API (PR1). Like the Chat Completions
 * adapter it speaks only the streaming wire format and maps it onto the same
 * provider contract: text deltas, tool calls announced before their argument
 * text, argument text passed on exactly as streamed (SPEC T2), one finish.
 * Thinking blocks are kept whole and sent back unchanged (SPEC PR5, anthropic-thinking.ts).
 */

export interface AnthropicProviderOptions {
  profile: string;
  /** Server root, e.g. `https://api.anthropic.com`; a trailing `/v1` is accepted too. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** The API requires an output limit on every request. */
  maxTokens?: number;
  /** Extended thinking (SPEC PR5): the budget must be below `maxTokens`. */
  thinking?: ThinkingOptions;
  /** Deadline for the whole response, headers to last event. */
  timeoutMs?: number;
  /** The profile's pooled fetch (provider-http.ts), or a test's; defaults to the global fetch. */
  fetch?: typeof fetch;
}

const anthropicVersion = "2023-06-01";
const defaultMaxTokens = 8192;
/** Long answers with many tool calls can take minutes; a deadline still stops a hung server. */
const defaultTimeoutMs = 10 * 60 * 1000;
/** Enough of an error body to diagnose, short enough for a log line. */
const errorExcerptLength = 300;

export function createAnthropicProvider(options: AnthropicProviderOptions): ModelProvider {
  const root = options.baseUrl.replace(/\/+$/, "");
  const url = root.endsWith("/v1") ? `${root}/messages` : `${root}/v1/messages`;
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const maxTokens = options.maxTokens ?? defaultMaxTokens;
  const fetchFn = options.fetch ?? fetch;
  const { thinking } = options;
  if (thinking && thinking.budgetTokens >= maxTokens)
    throw new FoyaError("provider_config", `profile "${options.profile}": thinking.budgetTokens must be below maxTokens (${maxTokens})`);

  return {
    profile: options.profile,
    defaultModel: options.model,
    stream(request: ProviderRequest, signal: AbortSignal): AsyncGenerator<ProviderStreamPart> {
      const headers: Record<string, string> = {
        "anthropic-version": anthropicVersion,
        ...(options.apiKey ? { "x-api-key": options.apiKey } : {}),
      };
      return postStream(
        {
          profile: options.profile,
          fetch: fetchFn,
          url,
          headers,
          body: toWireRequest(request, options.model, maxTokens, thinking),
          timeoutMs,
          signal,
        },
        parseStream,
      );
    },
  };
}

// ---------------------------------------------------------------------------
// Request mapping

type WireImage = { type: "image"; source: { type: "base64"; media_type: string; data: string } } & CacheMark;
type WireText = { type: "text"; text: string } & CacheMark;
type WireBlock =
  | WireText
  | WireImage
  | (WireThinkingBlock & CacheMark)
  | ({ type: "tool_use"; id: string; name: string; input: Record<string, unknown> } & CacheMark)
  | ({ type: "tool_result"; tool_use_id: string; content?: Array<WireText | WireImage>; is_error: boolean } & CacheMark);

interface WireMessage {
  role: "user" | "assistant";
  content: WireBlock[];
}

interface WireRequest {
  model: string;
  max_tokens: number;
  stream: true;
  /** With it the request sets no `temperature` (the API refuses the pair); none is ever sent. */
  thinking?: { type: "enabled"; budget_tokens: number };
  tool_choice?: { type: "auto"; disable_parallel_tool_use: true };
  tools?: ReadonlyArray<AnthropicTool & CacheMark>;
  system?: WireText[];
  messages: WireMessage[];
}

/**
 * Keys go in the order the API caches a prompt (tools, system, messages), so the body of
 * one step, up to its last message, is a byte prefix of the next step's (SPEC PR4); cache
 * breakpoints are then marked on it (anthropic-cache-breakpoints.ts).
 */
function toWireRequest(request: ProviderRequest, defaultModel: string, maxTokens: number, thinking?: ThinkingOptions): WireRequest {
  const hasTools = request.tools.length > 0;
  const wire: WireRequest = {
    model: request.model || defaultModel,
    max_tokens: maxTokens,
    stream: true,
    // The same for every step of a profile: before the cached prefix's content.
    ...(thinking ? { thinking: thinkingParameter(thinking) } : {}),
    ...(hasTools && request.parallelToolCalls === false ? { tool_choice: { type: "auto", disable_parallel_tool_use: true } } : {}),
    // Left out when empty, like the Chat Completions adapter does.
    ...(hasTools ? { tools: toAnthropicTools(request.tools) } : {}),
    // A block rather than a string: only a block can carry a cache breakpoint.
    ...(request.system ? { system: [{ type: "text", text: request.system }] } : {}),
    messages: toWireMessages(request.messages),
  };
  markCacheBreakpoints(wire);
  return wire;
}

/**
 * The API requires user and assistant turns to alternate, and tool results are
 * user content. So blocks of the same role are gathered into one turn: the
 * results of one assistant message become one user message, and a user
 * message right after them joins that turn (results first, as required).
 */
function toWireMessages(messages: readonly RequestMessage[]): WireMessage[] {
  const wire: WireMessage[] = [];
  for (const message of messages) {
    const role = message.role === "assistant" ? "assistant" : "user";
    const blocks = toWireBlocks(message);
    // The API rejects empty turns; an empty assistant answer is simply left out.
    if (blocks.length === 0) continue;
    const last = wire.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else wire.push({ role, content: blocks });
  }
  return wire;
}

function toWireBlocks(message: RequestMessage): WireBlock[] {
  switch (message.role) {
    case "user":
      return message.text ? [{ type: "text", text: message.text }] : [];
    case "assistant": {
      // Thinking goes back only with what it led to, first, as the API sent it (PR5).
      if (!message.text && message.toolCalls.length === 0) return [];
      const blocks: WireBlock[] = wireThinkingBlocks(message.reasoning);
      if (message.text) blocks.push({ type: "text", text: message.text });
      for (const call of message.toolCalls) {
        blocks.push({ type: "tool_use", id: call.callId, name: call.name, input: toolInput(call.argumentsRaw) });
      }
      return blocks;
    }
    case "tool": {
      // Empty text blocks are rejected; a result with no content at all is allowed.
      const content = message.content.filter((part) => part.type === "image" || part.text !== "").map(toWireResultPart);
      return [{ type: "tool_result", tool_use_id: message.callId, ...(content.length > 0 ? { content } : {}), is_error: message.isError }];
    }
  }
}

/**
 * This API takes tool input as a JSON object, not a string, so argumentsRaw
 * cannot go back verbatim as it does for Chat Completions (SPEC T2 holds for
 * what is stored and streamed, not for this re-encoding). Arguments that are
 * not a JSON object (the model wrote broken JSON, which the tool call already
 * failed on) are sent as `{}` so the conversation can go on.
 */
function toolInput(argumentsRaw: string): Record<string, unknown> {
  try {
    return asRecord(JSON.parse(argumentsRaw)) ?? {};
  } catch {
    return {};
  }
}

function toWireResultPart(part: RequestResultPart): WireText | WireImage {
  return part.type === "text"
    ? { type: "text", text: part.text }
    : { type: "image", source: { type: "base64", media_type: part.mediaType, data: part.dataBase64 } };
}

// ---------------------------------------------------------------------------
// Response parsing

/** What is known about one content block of the response, by its wire index. */
type BlockState =
  | { kind: "tool"; index: number; argumentsSent: boolean; startInput: Record<string, unknown> | undefined }
  | ThinkingState
  | { kind: "other" };

async function* parseStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ProviderStreamPart> {
  const reader = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  const blocks = new Map<number, BlockState>();
  let toolCount = 0;
  let stopReason: string | undefined;
  const usage = new UsageTotals();
  let lastEventSeen = false;
  try {
    for (;;) {
      const { done, value: message } = await reader.read();
      if (done) {
        lastEventSeen = true;
        break;
      }
      const event = parseEvent(message.data);
      // The `type` field repeats the SSE event name; it is what the API documents as authoritative.
      const type = asString(event.type) ?? message.event;
      if (type === "message_stop") {
        lastEventSeen = true;
        break;
      }
      switch (type) {
        case "message_start":
          usage.add(asRecord(asRecord(event.message)?.usage));
          break;
        case "content_block_start": {
          const index = blockIndex(event);
          const block = asRecord(event.content_block);
          if (block?.type === "tool_use") {
            const id = asString(block.id);
            const name = asString(block.name);
            if (!id || !name) throw new FoyaError("provider_error", `tool_use block ${index} has no ${id ? "name" : "id"}`);
            const input = asRecord(block.input);
            blocks.set(index, {
              kind: "tool",
              index: toolCount,
              argumentsSent: false,
              startInput: input && Object.keys(input).length > 0 ? input : undefined,
            });
            yield { type: "tool-call-start", index: toolCount, id, name };
            toolCount++;
          } else {
            const thinking = block ? startThinking(block, index) : undefined;
            blocks.set(index, thinking?.state ?? { kind: "other" });
            if (thinking?.part) yield thinking.part;
            const text = block?.type === "text" ? asString(block.text) : undefined;
            if (text) yield { type: "text-delta", text };
          }
          break;
        }
        case "content_block_delta": {
          const index = blockIndex(event);
          const delta = asRecord(event.delta);
          if (delta?.type === "text_delta") {
            const text = asString(delta.text);
            if (text) yield { type: "text-delta", text };
          } else if (delta?.type === "input_json_delta") {
            const block = blocks.get(index);
            if (block?.kind !== "tool")
              throw new FoyaError("provider_error", `input_json_delta for block ${index}, which is not a tool_use block`);
            const fragment = asString(delta.partial_json);
            // Passed on exactly as received (SPEC T2).
            if (fragment) {
              block.argumentsSent = true;
              yield { type: "tool-call-delta", index: block.index, argumentsDelta: fragment };
            }
          } else if (delta?.type === "thinking_delta" || delta?.type === "signature_delta") {
            const block = blocks.get(index);
            const part = applyThinkingDelta(block?.kind === "thinking" ? block : undefined, delta, index);
            if (part) yield part;
          }
          // Citation deltas carry nothing the contract has a place for.
          break;
        }
        case "content_block_stop": {
          const block = blocks.get(blockIndex(event));
          // Some compatible servers put the whole input in the start block and stream no deltas.
          if (block?.kind === "tool" && !block.argumentsSent && block.startInput) {
            block.argumentsSent = true;
            yield { type: "tool-call-delta", index: block.index, argumentsDelta: JSON.stringify(block.startInput) };
          }
          if (block?.kind === "thinking" || block?.kind === "redacted") yield endThinking(block);
          break;
        }
        case "message_delta":
          stopReason = asString(asRecord(event.delta)?.stop_reason) ?? stopReason;
          usage.add(asRecord(event.usage));
          break;
        case "error": {
          const error = asRecord(event.error);
          throw new FoyaError("provider_error", asString(error?.message) ?? JSON.stringify(event.error ?? event));
        }
        // `ping` keeps the connection alive; event types added later are to be ignored, per the API's versioning policy.
        default:
          break;
      }
    }
    if (!stopReason) throw new FoyaError("provider_error", "stream ended without a stop reason");
    const reported = usage.toUsage();
    yield { type: "finish", reason: mapStopReason(stopReason), stopReason, ...(reported ? { usage: reported } : {}) };
  } finally {
    await releaseBody(reader, lastEventSeen);
  }
}

/**
 * Usage arrives in `message_start` (input and cache counts) and `message_delta`
 * (cumulative output; newer servers repeat the input counts). Later values win.
 */
class UsageTotals {
  private input: number | undefined;
  private output: number | undefined;
  private cacheRead: number | undefined;
  private cacheWrite: number | undefined;

  add(wire: Record<string, unknown> | undefined): void {
    if (!wire) return;
    this.input = asNumber(wire.input_tokens) ?? this.input;
    this.output = asNumber(wire.output_tokens) ?? this.output;
    this.cacheRead = asNumber(wire.cache_read_input_tokens) ?? this.cacheRead;
    this.cacheWrite = asNumber(wire.cache_creation_input_tokens) ?? this.cacheWrite;
  }

  /**
   * `input_tokens` here excludes cached tokens, while OpenAI's `prompt_tokens`
   * includes them. `inputTokens` is the whole prompt for every adapter, so it
   * can be compared with a context window; the cache fields tell how it split.
   */
  toUsage(): Usage | undefined {
    if (this.input === undefined && this.output === undefined) return undefined;
    const usage: Usage = {
      inputTokens: (this.input ?? 0) + (this.cacheRead ?? 0) + (this.cacheWrite ?? 0),
      outputTokens: this.output ?? 0,
    };
    if (this.cacheRead !== undefined) usage.cacheReadTokens = this.cacheRead;
    if (this.cacheWrite !== undefined) usage.cacheWriteTokens = this.cacheWrite;
    return usage;
  }
}

function mapStopReason(reason: string): FinishReason {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
      return "length";
    case "refusal":
      return "content_filter";
    // pause_turn (a server tool paused a long turn) and values added later.
    default:
      return "other";
  }
}

function parseEvent(data: string): Record<string, unknown> {
  const excerpt = data.slice(0, errorExcerptLength);
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch (error) {
    throw new FoyaError("provider_error", `unparseable stream event: ${excerpt}`, { cause: error });
  }
  const event = asRecord(parsed);
  if (!event) throw new FoyaError("provider_error", `stream event is not an object: ${excerpt}`);
  return event;
}

function blockIndex(event: Record<string, unknown>): number {
  const index = asNumber(event.index);
  if (index === undefined) throw new FoyaError("provider_error", `${String(event.type)} event without an index`);
  return index;
}
