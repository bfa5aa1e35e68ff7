import type { FoyaEvent } from "@foya/client";
import { oneLine } from "./one-line.js";
import { pointText } from "./point-text.js";

/** One event as one line of a log tail: what happened, with the ids to act on. */
export function describeEvent(event: FoyaEvent): string {
  switch (event.type) {
    case "run_start":
      return `run ${event.data.runId} (#${event.data.ordinal})`;
    case "step_start":
      return `step ${event.data.stepIndex} attempt ${event.data.attempt}`;
    case "text_delta":
      return JSON.stringify(event.data.text);
    case "thinking_delta":
      return event.data.redacted ? "(redacted)" : JSON.stringify(event.data.text);
    case "tool_begin":
      return `${event.data.name} ${event.data.callId}`;
    case "tool_update": {
      const parts = [event.data.callId];
      if (event.data.status) parts.push(event.data.status);
      if (event.data.progress !== undefined) parts.push(oneLine(event.data.progress));
      if (event.data.argumentsDelta !== undefined) parts.push(`arguments ${JSON.stringify(event.data.argumentsDelta)}`);
      return parts.join(" ");
    }
    case "tool_end": {
      const { name, status, errorCode, preview, fileChanges } = event.data;
      const changes = fileChanges?.length ? ` [${fileChanges.map((change) => `${change.id} ${change.path}`).join(", ")}]` : "";
      return `${name} ${status}${errorCode ? ` (${errorCode})` : ""}${changes} ${oneLine(preview, 80)}`.trimEnd();
    }
    case "approval_request":
      return `${event.data.approvalId} ${event.data.name}: ${event.data.reason}`;
    case "approval_resolved":
      return `${event.data.approvalId} ${event.data.status}${event.data.edited ? " (edited)" : ""}${event.data.reason ? `: ${event.data.reason}` : ""}`;
    case "step_end":
      return `step ${event.data.stepIndex} ${event.data.finishReason}, ${event.data.toolCalls} tool call${event.data.toolCalls === 1 ? "" : "s"}`;
    case "run_status":
      return `${event.data.status}${event.data.reason ? `: ${event.data.reason}` : ""}`;
    case "subagent_start":
      return `session ${event.data.childSessionId} run ${event.data.childRunId} (depth ${event.data.depth})`;
    case "workspace_restored":
      return `${event.data.reason}: rebuilt from checkpoint ${event.data.checkpointSeq} (${event.data.files} files)`;
    case "session_rewound":
      return `to ${pointText(event.data.at)}; branch ${event.data.branchId}, ${event.data.messagesSetAside} messages set aside, ${event.data.notUndone.length} calls not undone`;
    case "session_forked":
      return `from ${event.data.fromSessionId} at ${pointText(event.data.at)}`;
    case "tasks_updated":
      return event.data.tasks.map((task) => `${task.title} (${task.status})`).join("; ");
    case "run_end":
      return `${event.data.status}${event.data.error ? `: ${event.data.error.message} (${event.data.error.code})` : ""}`;
    default:
      return event satisfies never;
  }
}
