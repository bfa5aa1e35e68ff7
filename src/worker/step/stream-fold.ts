import type { EventBody } from "../../core/events.js";
import type { AssistantToolCall, ReasoningBlock } from "../../core/history.js";
import { storableText } from "../../core/storable-text.js";
import type { FinishReason, ProviderStreamPart, Usage } from "../../providers/provider.js";

/** A model response as its stream parts have built it so far. */
export interface StreamFold {
  text: string;
  /** By the call's index in the response. */
  calls: Map<number, AssistantToolCall>;
  /** Complete reasoning blocks in the model's order, as the provider sent them (PR5). */
  reasoning: ReasoningBlock[];
  finish: { reason: FinishReason; stopReason?: string; usage?: Usage } | undefined;
}

/** A live event a part makes; `urgent` ones are written at once (L1: a `tool_begin`). */
export interface LiveEvent {
  body: EventBody;
  urgent: boolean;
}

export function emptyFold(): StreamFold {
  return { text: "", calls: new Map(), reasoning: [], finish: undefined };
}

/**
 * Folds one stream part into the response and answers the live event it makes, if any (as
 * Vercel's `chunks-to-step-result` folds chunks). Deltas are made storable one by one for the
 * live events; the whole strings once complete (`foldedResponse`), so a pair split across
 * deltas survives.
 */
export function foldStreamPart(fold: StreamFold, part: ProviderStreamPart): LiveEvent | undefined {
  switch (part.type) {
    case "text-delta":
      fold.text += part.text;
      return { body: { type: "text_delta", text: storableText(part.text) }, urgent: false };
    case "reasoning-delta":
      return { body: { type: "thinking_delta", text: storableText(part.text) }, urgent: false };
    case "reasoning-block":
      fold.reasoning.push(part.block);
      return part.redacted ? { body: { type: "thinking_delta", text: "", redacted: true }, urgent: false } : undefined;
    case "tool-call-start": {
      const call = { callId: storableText(part.id), name: storableText(part.name), argumentsRaw: "" };
      fold.calls.set(part.index, call);
      const body = { type: "tool_begin", callId: call.callId, name: call.name, callIndex: part.index, status: "queued" } as const;
      return { body, urgent: true };
    }
    case "tool-call-delta": {
      const call = fold.calls.get(part.index);
      if (!call) throw new Error(`provider sent arguments for unknown call index ${part.index}`);
      call.argumentsRaw += part.argumentsDelta;
      return { body: { type: "tool_update", callId: call.callId, argumentsDelta: storableText(part.argumentsDelta) }, urgent: false };
    }
    case "finish":
      fold.finish = {
        reason: part.reason,
        ...(part.stopReason !== undefined ? { stopReason: storableText(part.stopReason) } : {}),
        ...(part.usage ? { usage: part.usage } : {}),
      };
      return undefined;
    default: {
      const unreachable: never = part;
      throw new Error(`unknown stream part ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The response once its stream ended: the calls in model order, the whole strings made storable. */
export function foldedResponse(fold: StreamFold): Pick<StreamFold, "text" | "finish" | "reasoning"> & { toolCalls: AssistantToolCall[] } {
  const toolCalls = [...fold.calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, call]) => ({ ...call, argumentsRaw: storableText(call.argumentsRaw) }));
  return { text: storableText(fold.text), toolCalls, reasoning: fold.reasoning.map(storableBlock), finish: fold.finish };
}

/**
 * Reasoning is kept byte for byte; only a NUL or an unpaired surrogate, which Postgres cannot
 * hold and no model has been seen to send, is replaced (and the provider would refuse the block).
 */
function storableBlock(block: ReasoningBlock): ReasoningBlock {
  if (block.format === "openai-chat") return { ...block, text: storableText(block.text) };
  const { wire } = block;
  return wire.type === "thinking"
    ? { format: block.format, wire: { type: wire.type, thinking: storableText(wire.thinking), signature: storableText(wire.signature) } }
    : { format: block.format, wire: { type: wire.type, data: storableText(wire.data) } };
}
