import type { EventBody } from "./events.js";
import type { HistoryMessage, ResultPart } from "./history.js";
import type { TerminalToolCallStatus } from "./tool-call-status.js";
import type { FileChangeRecord } from "./file-change-record.js";
import type { FileChangeId } from "./ids.js";

export interface CallOutcome {
  status: TerminalToolCallStatus;
  isError: boolean;
  errorCode?: string | null;
  content: ResultPart[];
  /** Shown to clients only, never to the model (L2). */
  diff?: string;
  /** File-change records stored with the call, with their ids (F1, F5). */
  fileChanges?: Array<FileChangeRecord & { id: FileChangeId }>;
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
          fileChanges: outcome.fileChanges.map(({ id, path, existedBefore, sha256Before, sha256After, notApplied }) => ({
            id,
            path,
            existedBefore,
            sha256Before,
            sha256After,
            ...(notApplied ? { notApplied } : {}),
          })),
        }
      : {}),
  };
}

function previewOf(content: readonly ResultPart[]): string {
  const text = content.map((part) => (part.type === "text" ? part.text : `[${part.type} ${part.artifactId}]`)).join("\n");
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
