import type { FoyaClient } from "@foya/client";
import { ForkButton } from "./fork-button.js";
import type { StepView, ToolCallView } from "./run-timeline.js";
import { ToolCall } from "./tool-call.js";

const unfinished = new Set<ToolCallView["status"]>(["queued", "awaiting_approval", "running"]);

/**
 * One model step of a run: its text, its calls, and "Fork from here" once the step is committed
 * (the model's part ended and every call has its result), as a fork takes committed history only.
 */
export function StepSection(props: {
  client: FoyaClient;
  sessionId: string;
  runId: string;
  step: StepView | undefined;
  index: number;
  calls: ToolCallView[];
}) {
  const { client, sessionId, runId, step, index, calls } = props;
  const committed = step?.ended === true && index >= 0 && calls.every((call) => !unfinished.has(call.status));
  return (
    <div class="step" data-step-index={index}>
      {step?.thinking && (
        <details class="assistant-thinking">
          <summary>Reasoning</summary>
          {step.thinking}
        </details>
      )}
      {step?.text && <div class="assistant-text">{step.text}</div>}
      {calls.map((call) => (
        <ToolCall key={call.callId} call={call} client={client} sessionId={sessionId} />
      ))}
      {committed && (
        <div class="row step-actions">
          <span class="hint">step {index}</span>
          <ForkButton client={client} sessionId={sessionId} runId={runId} stepIndex={index} />
        </div>
      )}
    </div>
  );
}
