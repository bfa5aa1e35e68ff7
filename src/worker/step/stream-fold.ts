import type { EventBody } from "../../core/events.js";
import type { AssistantToolCall } from "../../core/history.js";
import { storableText } from "../../core/storable-text.js";
import type { FinishReason, ProviderStreamPart, Usage } from "../../providers/provider.js";

/** A model response as its stream parts have built it so far. */
export interface StreamFold {
  text: string;
  /** By the call's index in the response. */
  calls: Map<number, AssistantToolCall>;
  finish: { reason: FinishReason; stopReason?: string; usage?: Usage } | undefined;
}

/** A live event a part makes; `urgent` ones are written at once (L1: a `tool_begin`). */
export interface LiveEvent {
  body: EventBody;
  urgent: boolean;
}

export function emptyFold(): StreamFold {
  return { text: "", calls: new Map(), finish: undefined };
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
export function foldedResponse(fold: StreamFold): Pick<StreamFold, "text" | "finish"> & { toolCalls: AssistantToolCall[] } {
  const toolCalls = [...fold.calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, call]) => ({ ...call, argumentsRaw: storableText(call.argumentsRaw) }));
  return { text: storableText(fold.text), toolCalls, finish: fold.finish };
}
