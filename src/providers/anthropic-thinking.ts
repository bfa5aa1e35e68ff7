import { FoyaError } from "../errors.js";
import type { ReasoningBlock } from "../core/history.js";
import type { ProviderStreamPart } from "./provider.js";
import { asString } from "./wire-fields.js";

/**
 * Extended thinking on the Anthropic Messages API (SPEC PR5). The API streams `thinking` blocks
 * (text in `thinking_delta`s, then a `signature_delta`) and `redacted_thinking` blocks (encrypted,
 * whole in their start), and refuses a tool-use continuation unless the assistant turn carries
 * those blocks back exactly as they came. So each is kept whole, and sent back field for field.
 */

/** What the profile asks for; the API wants `max_tokens` above the budget and no `temperature` beside it. */
export interface ThinkingOptions {
  budgetTokens: number;
}

export type WireThinkingBlock = { type: "thinking"; thinking: string; signature: string } | { type: "redacted_thinking"; data: string };

/** The request's `thinking` parameter. */
export function thinkingParameter(options: ThinkingOptions): { type: "enabled"; budget_tokens: number } {
  return { type: "enabled", budget_tokens: options.budgetTokens };
}

/**
 * The blocks of an assistant turn this API made, in their wire shape with a fixed key order, so
 * the same history gives the same bytes whatever order storage gave the keys back. Blocks of
 * another format (an OpenAI-compatible server's reasoning) mean nothing here and are left out.
 */
export function wireThinkingBlocks(reasoning: readonly ReasoningBlock[] | undefined): WireThinkingBlock[] {
  const blocks: WireThinkingBlock[] = [];
  for (const block of reasoning ?? []) {
    if (block.format !== "anthropic-messages") continue;
    const { wire } = block;
    blocks.push(
      wire.type === "thinking"
        ? { type: "thinking", thinking: wire.thinking, signature: wire.signature }
        : { type: "redacted_thinking", data: wire.data },
    );
  }
  return blocks;
}

/** A thinking block while its deltas arrive. */
export type ThinkingState = { kind: "thinking"; thinking: string; signature: string } | { kind: "redacted"; data: string };

/** The state of a `content_block_start` of either thinking type, with the reasoning text it already carries; undefined for other blocks. */
export function startThinking(
  block: Record<string, unknown>,
  index: number,
): { state: ThinkingState; part?: ProviderStreamPart } | undefined {
  if (block.type === "redacted_thinking") {
    const data = asString(block.data);
    if (data === undefined) throw new FoyaError("provider_error", `redacted_thinking block ${index} has no data`);
    return { state: { kind: "redacted", data } };
  }
  if (block.type !== "thinking") return undefined;
  const thinking = asString(block.thinking) ?? "";
  const state: ThinkingState = { kind: "thinking", thinking, signature: asString(block.signature) ?? "" };
  return thinking ? { state, part: { type: "reasoning-delta", text: thinking } } : { state };
}

/** Applies a `thinking_delta` or `signature_delta`; answers the part to stream, if any. */
export function applyThinkingDelta(
  state: ThinkingState | undefined,
  delta: Record<string, unknown>,
  index: number,
): ProviderStreamPart | undefined {
  if (state?.kind !== "thinking")
    throw new FoyaError("provider_error", `${String(delta.type)} for block ${index}, which is not a thinking block`);
  if (delta.type === "signature_delta") {
    state.signature += asString(delta.signature) ?? "";
    return undefined;
  }
  const fragment = asString(delta.thinking);
  if (!fragment) return undefined;
  state.thinking += fragment;
  return { type: "reasoning-delta", text: fragment };
}

/** The complete block, at its `content_block_stop`. */
export function endThinking(state: ThinkingState): ProviderStreamPart {
  return state.kind === "thinking"
    ? {
        type: "reasoning-block",
        block: { format: "anthropic-messages", wire: { type: "thinking", thinking: state.thinking, signature: state.signature } },
      }
    : {
        type: "reasoning-block",
        block: { format: "anthropic-messages", wire: { type: "redacted_thinking", data: state.data } },
        redacted: true,
      };
}
