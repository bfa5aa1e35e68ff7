import type { AssistantToolCall, ReasoningBlock } from "../core/history.js";

/**
 * The provider contract. An adapter turns a provider-neutral request into the
 * provider's wire format and streams back provider-neutral parts. Adapters do
 * no retries and keep no state between calls: the step job owns both.
 */

/** A function tool as every provider sees it, before wire formatting. */
export interface FunctionToolSchema {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/**
 * A tool result part as a model receives it. The context compiler
 * (`src/context/compile-request.ts`) builds these from canonical history:
 * images are materialized from the artifact store for models that take them,
 * or replaced by a note saying an image was omitted (SPEC I3).
 */
export type RequestResultPart = { type: "text"; text: string } | { type: "image"; mediaType: string; dataBase64: string };

/**
 * A message of a provider request: canonical history as compiled for one model (SPEC O2).
 * An assistant's `reasoning` is every block history holds; an adapter sends back, unchanged, the
 * blocks of its own format and leaves the others out (SPEC PR5).
 */
export type RequestMessage =
  | { role: "user"; text: string }
  | { role: "assistant"; text: string; toolCalls: AssistantToolCall[]; reasoning?: ReasoningBlock[] }
  | { role: "tool"; callId: string; name: string; isError: boolean; content: RequestResultPart[] };

export interface ProviderRequest {
  model: string;
  /** Compiled history, oldest first; tool messages follow their assistant message in call order. */
  messages: RequestMessage[];
  /**
   * In the run's order: sorted by name at its first step (SPEC R2), tools that joined later
   * at the end (PR4). Adapters keep the order. The same frozen list comes back while the
   * exposed list is unchanged, so renderings can be cached.
   */
  tools: readonly FunctionToolSchema[];
  /** Optional system prompt, sent first. */
  system?: string;
  /**
   * Whether the model may answer with several tool calls at once (the profile's
   * `capabilities.parallelToolCalls`, SPEC PR2); false asks it for one call per response.
   */
  parallelToolCalls?: boolean;
}

export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter" | "error" | "other";

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** Prompt-cache tokens, where the provider reports them. */
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/**
 * Stream parts. For tool calls, `index` is the call's position in the response
 * (0-based, in the model's order). `tool-call-start` comes as soon as the id and
 * name are known, before any argument text; `tool-call-delta` parts carry the
 * argument string in pieces that, concatenated, are byte for byte what the model
 * produced (SPEC T2). Reasoning blocks come in the order the model produced them.
 */
export type ProviderStreamPart =
  | { type: "text-delta"; text: string }
  /** Reasoning text as the model produces it, for clients to watch (SPEC PR5); never answer text. */
  | { type: "reasoning-delta"; text: string }
  /**
   * A reasoning block complete, as it is to be kept and sent back (SPEC PR5): after its last
   * delta. `redacted`: the block is encrypted reasoning, with no delta, shown to no one.
   */
  | { type: "reasoning-block"; block: ReasoningBlock; redacted?: true }
  | { type: "tool-call-start"; index: number; id: string; name: string }
  | { type: "tool-call-delta"; index: number; argumentsDelta: string }
  /** `stopReason` is the provider's own value as sent (e.g. `end_turn`), kept beside the normalized `reason`. */
  | { type: "finish"; reason: FinishReason; stopReason?: string; usage?: Usage };

export interface ModelProvider {
  /** Profile name, as configured on the server. */
  readonly profile: string;
  readonly defaultModel: string;
  /**
   * Streams one model response. Throws `FoyaError` with code `provider_error`
   * for transport or protocol failures (the step job decides whether to retry);
   * honours `signal` by ending the stream with an AbortError.
   */
  stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderStreamPart>;
}
