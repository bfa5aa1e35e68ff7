import type { FoyaClient } from "@foya/client";
import { inHistory } from "./rewind-fold.js";
import type { RunView } from "./run-timeline.js";
import { StatusBadge } from "./status-badge.js";
import { StepSection } from "./step-section.js";
import { UserMessageView, type UserMessage } from "./user-message.js";

/** One run as it streams: its input, its status, and each model step with its text and tool calls. */
export function RunCard(props: { run: RunView; client: FoyaClient; sessionId: string; input: UserMessage | undefined }) {
  const { run, client, sessionId, input } = props;
  const steps = run.steps.filter(inHistory);
  const calls = run.calls.filter(inHistory);
  // Steps in order; a call whose step_start was not seen still shows, in a step of its own index.
  const indexes = [...new Set([...steps.map((step) => step.index), ...calls.map((call) => call.stepIndex)])].sort((a, b) => a - b);
  return (
    <article class="card run" data-run-id={run.runId}>
      <header>
        <span class="mono">{run.runId}</span>
        <StatusBadge status={run.status} />
      </header>
      {input && <UserMessageView client={client} sessionId={sessionId} message={input} />}
      {indexes.map((index) => (
        <StepSection
          key={index}
          client={client}
          sessionId={sessionId}
          runId={run.runId}
          index={index}
          step={steps.find((step) => step.index === index)}
          calls={calls.filter((call) => call.stepIndex === index)}
        />
      ))}
      {run.error && <p class="error">{run.error}</p>}
    </article>
  );
}
