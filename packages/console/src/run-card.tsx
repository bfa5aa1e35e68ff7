import { DiffView } from "./diff-view.js";
import { Link } from "./link.js";
import type { RunView, ToolCallView } from "./run-timeline.js";
import { StatusBadge } from "./status-badge.js";

/** One run as it streams: its status, the model's text, and each tool call with status, result and diff. */
export function RunCard(props: { run: RunView }) {
  const { run } = props;
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
        <ToolCall key={call.callId} call={call} />
      ))}
      {text && <div class="assistant-text">{text}</div>}
      {run.error && <p class="error">{run.error}</p>}
    </article>
  );
}

function ToolCall(props: { call: ToolCallView }) {
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
    </div>
  );
}
