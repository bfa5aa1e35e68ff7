import type { FoyaClient } from "@foya/client";
import { DiffView } from "./diff-view.js";
import { ToolImages } from "./tool-images.js";
import { Link } from "./link.js";
import type { RunView, ToolCallView } from "./run-timeline.js";
import { StatusBadge } from "./status-badge.js";

/** One run as it streams: its status, the model's text, and each tool call with status, result, diff and images. */
export function RunCard(props: { run: RunView; client: FoyaClient; sessionId: string }) {
  const { run, client, sessionId } = props;
  const text = run.steps
    .slice()
    .sort((a, b) => a.index - b.index)
    .map((step) => step.text)
    .join("");
  return (
    <article class="card run" data-run-id={run.runId}>
      <header>
        <span class="mono">{run.runId}</span>
        <StatusBadge status={run.status} />
      </header>
      {run.calls.map((call) => (
        <ToolCall key={call.callId} call={call} client={client} sessionId={sessionId} />
      ))}
      {text && <div class="assistant-text">{text}</div>}
      {run.error && <p class="error">{run.error}</p>}
    </article>
  );
}

function ToolCall(props: { call: ToolCallView; client: FoyaClient; sessionId: string }) {
  const { call } = props;
  return (
    <div class="tool-call" data-call-id={call.callId}>
      <div class="row">
        <strong>{call.name}</strong>
        <StatusBadge status={call.status} />
        {call.status === "awaiting_approval" && <Link to={{ screen: "approvals" }}>decide in Approvals</Link>}
      </div>
      {call.approvalReason && call.status === "awaiting_approval" && <p class="hint">{call.approvalReason}</p>}
      {/* A call that changed files shows its diff (SPEC F5); others show what the model passed. */}
      {call.diff ? <DiffView diff={call.diff} /> : call.argumentsText && <pre class="arguments">{call.argumentsText}</pre>}
      {call.preview && <pre class="preview">{call.preview}</pre>}
      {call.status === "succeeded" && <ToolImages client={props.client} sessionId={props.sessionId} callId={call.callId} />}
    </div>
  );
}
