import type { FoyaClient } from "@foya/client";
import { DiffView } from "./diff-view.js";
import { Link } from "./link.js";
import type { ToolCallView } from "./run-timeline.js";
import { StatusBadge } from "./status-badge.js";
import { ToolImages } from "./tool-images.js";

/** One tool call: status, the way to decide it, its diff or arguments, its result preview and images. */
export function ToolCall(props: { call: ToolCallView; client: FoyaClient; sessionId: string }) {
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
