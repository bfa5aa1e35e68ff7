import type { StepRef } from "../core/events.js";
import type { ResultPart } from "../core/history.js";
import type { TerminalToolCallStatus } from "../core/tool-call-status.js";
import { insertToolMessage } from "./history-store.js";
import type { Effects } from "./transact.js";

export interface CallOutcome {
  status: TerminalToolCallStatus;
  isError: boolean;
  errorCode?: string | null;
  content: ResultPart[];
  /** Shown to clients only, never to the model (L2). */
  diff?: string;
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
  await insertToolMessage(fx.tx, {
    tenantId: run.tenantId,
    sessionId: run.sessionId,
    runId: run.id,
    runOrdinal: run.ordinal,
    stepIndex: call.stepIndex,
    callIndex: call.callIndex,
    callId: call.callId,
    name: call.name,
    status: outcome.status,
    isError: outcome.isError,
    content: outcome.content,
  });
  await fx.emit(run.tenantId, run.sessionId, [
    {
      runId: run.id,
      step,
      body: {
        type: "tool_end",
        callId: call.callId,
        name: call.name,
        status: outcome.status,
        isError: outcome.isError,
        ...(outcome.errorCode ? { errorCode: outcome.errorCode } : {}),
        preview: previewOf(outcome.content),
        ...(outcome.diff ? { diff: outcome.diff } : {}),
      },
    },
  ]);
}

function previewOf(content: readonly ResultPart[]): string {
  const text = content.map((part) => (part.type === "text" ? part.text : `[${part.type} ${part.artifactId}]`)).join("\n");
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
