import type { EventBody, StepRef } from "../core/events.js";
import type { HistoryMessage, ResultPart } from "../core/history.js";
import type { TerminalToolCallStatus } from "../core/tool-call-status.js";
import { insertMessage } from "./history-store.js";
import type { FileChangeRecord } from "../tools/tool.js";
import type { Effects } from "./transact.js";

export interface CallOutcome {
  status: TerminalToolCallStatus;
  isError: boolean;
  errorCode?: string | null;
  content: ResultPart[];
  /** Shown to clients only, never to the model (L2). */
  diff?: string;
  /** File-change records stored with the call, with their ids (F1, F5). */
  fileChanges?: Array<FileChangeRecord & { id: string }>;
}

/** The tool message the model sees next for a finished call. */
export function toolMessageOf(call: { callId: string; name: string }, outcome: CallOutcome): HistoryMessage {
  return { role: "tool", callId: call.callId, name: call.name, status: outcome.status, isError: outcome.isError, content: outcome.content };
}

/** The `tool_end` event clients see for a finished call: a preview and the display diff, never binary content. */
export function toolEndEvent(call: { callId: string; name: string }, outcome: CallOutcome): EventBody {
  return {
    type: "tool_end",
    callId: call.callId,
    name: call.name,
    status: outcome.status,
    isError: outcome.isError,
    ...(outcome.errorCode ? { errorCode: outcome.errorCode } : {}),
    preview: previewOf(outcome.content),
    ...(outcome.diff ? { diff: outcome.diff } : {}),
    ...(outcome.fileChanges?.length
      ? {
          fileChanges: outcome.fileChanges.map(({ id, path, existedBefore, sha256Before, sha256After }) => ({ id, path, existedBefore, sha256Before, sha256After })),
        }
      : {}),
  };
}

/**
 * Writes the two views of a finished call (SPEC L2): the tool message the model
 * sees next, and the `tool_end` event clients see. The caller has already moved
 * the call to its terminal status in the same transaction.
 */
export async function answerCall(
  fx: Effects,
  run: { id: string; tenantId: string; sessionId: string; ordinal: number },
  call: { stepIndex: number; callIndex: number; callId: string; name: string },
  outcome: CallOutcome,
  step: StepRef | null,
): Promise<void> {
  await insertMessage(
    fx.tx,
    { tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id },
    { runOrdinal: run.ordinal, stepIndex: call.stepIndex, part: 2, callIndex: call.callIndex },
    toolMessageOf(call, outcome),
  );
  await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step, body: toolEndEvent(call, outcome) }]);
}

function previewOf(content: readonly ResultPart[]): string {
  const text = content.map((part) => (part.type === "text" ? part.text : `[${part.type} ${part.artifactId}]`)).join("\n");
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
