import type { TerminalToolCallStatus } from "./tool-call-status.js";
import type { ArtifactId } from "./ids.js";

/**
 * Canonical history as stored in `messages.content`. Provider adapters translate
 * it; nothing here is provider specific. A tool message exists for every call id
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

export type HistoryMessage =
  | { role: "user"; text: string }
  | { role: "assistant"; text: string; toolCalls: AssistantToolCall[] }
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
