import type { TerminalToolCallStatus } from "./tool-call-status.js";
import type { ArtifactId } from "./ids.js";

/**
 * Canonical history as stored in `messages.content`. Provider adapters translate
 * it; nothing here is provider specific but `ReasoningBlock`. A tool message exists for every call id
 * of an assistant message once its batch is done, so the history is valid for
 * every provider (SPEC D3, P6).
 */
export type ResultPart =
  | { type: "text"; text: string }
  | { type: "image"; artifactId: ArtifactId; mediaType: string }
  | { type: "artifact"; artifactId: ArtifactId; mediaType: string; name?: string };

export interface AssistantToolCall {
  callId: string;
  name: string;
  /** Exactly the string the model produced (SPEC T2). */
  argumentsRaw: string;
}

/**
 * Reasoning that came with an assistant message (SPEC PR5), the one provider-specific part of
 * history: kept exactly as the provider sent it, because Anthropic refuses a tool-use
 * continuation whose thinking blocks or signatures differ from what it streamed. `format` names
 * the adapter that made the block; only that adapter sends it back, the others leave it out.
 */
export type ReasoningBlock =
  /** An Anthropic block in its wire shape: text and signature each the concatenation of their deltas; redacted ones encrypted. */
  | {
      format: "anthropic-messages";
      wire: { type: "thinking"; thinking: string; signature: string } | { type: "redacted_thinking"; data: string };
    }
  /** The reasoning text of an OpenAI-compatible server, under the message field it came in (`reasoning_content`, `reasoning`). */
  | { format: "openai-chat"; field: string; text: string };

export type HistoryMessage =
  | { role: "user"; text: string }
  /** `reasoning` only when the model sent some (PR5); it is sent back before the text and calls. */
  | { role: "assistant"; text: string; toolCalls: AssistantToolCall[]; reasoning?: ReasoningBlock[] }
  | {
      role: "tool";
      callId: string;
      name: string;
      status: TerminalToolCallStatus;
      isError: boolean;
      content: ResultPart[];
    };

/** Ordering key of a message inside its session; unique, so a redelivered job cannot insert twice (D4). */
export interface MessagePosition {
  runOrdinal: number;
  /** -1 for the user's input of a run. */
  stepIndex: number;
  /** 0 user, 1 assistant, 2 tool result. */
  part: 0 | 1 | 2;
  callIndex: number;
}
