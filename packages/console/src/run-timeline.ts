import type { FoyaEvent, RunStatus, ToolCallStatus } from "@foya/client";

/** A tool call as the run view shows it, folded from its events. */
export interface ToolCallView {
  callId: string;
  name: string;
  status: ToolCallStatus;
  /** The arguments as streamed so far (tool_update deltas). */
  argumentsText: string;
  approvalId?: string;
  approvalReason?: string;
  preview?: string;
  diff?: string;
  fileChanges: Array<{ id: string; path: string }>;
  /** The model step that made the call. */
  stepIndex: number;
  /** The branch a rewind set it aside into (its step came after the point). */
  setAsideBy?: string;
}

/** One model step's text; a retried step (higher attempt) replaces what its earlier attempt streamed (SPEC X1). */
export interface StepView {
  index: number;
  attempt: number;
  text: string;
  /** The model's reasoning streamed before or between its text (extended thinking), when it sent some. */
  thinking?: string;
  /** Its step_end arrived: the model's part is done (its calls may still run). */
  ended: boolean;
  setAsideBy?: string;
}

export interface RunView {
  runId: string;
  /** The run's place in the session (run_start), which rewinds and forks name points by. */
  ordinal?: number;
  status: RunStatus | "recovering" | "waiting_for_provider";
  steps: StepView[];
  calls: ToolCallView[];
  error?: string;
  /** The branch a rewind set the whole run aside into; gone from the session's history until brought back. */
  setAsideBy?: string;
}

/** The session's runs, oldest first (those set aside by a rewind included, marked). */
export type Timeline = RunView[];

/** Folds one event into the timeline; returns a new timeline (the old one is not changed). */
export function applyEvent(timeline: Timeline, event: FoyaEvent): Timeline {
  const runs = timeline.slice();
  let index = runs.findIndex((run) => run.runId === event.runId);
  if (index < 0) {
    runs.push({ runId: event.runId, status: "running", steps: [], calls: [] });
    index = runs.length - 1;
  }
  const previous = runs[index] as RunView;
  const run: RunView = { ...previous, steps: previous.steps.slice(), calls: previous.calls.slice() };
  runs[index] = run;
  const updateCall = (callId: string, change: (call: ToolCallView) => Partial<ToolCallView>) => {
    const at = run.calls.findIndex((call) => call.callId === callId);
    const call = run.calls[at];
    if (call) run.calls[at] = { ...call, ...change(call) };
  };
  switch (event.type) {
    case "run_start":
      run.status = "running";
      run.ordinal = event.data.ordinal;
      break;
    case "step_start": {
      const { stepIndex, attempt } = event.data;
      // A step that waited for its provider (PR3) has started.
      if (run.status === "waiting_for_provider") run.status = "running";
      run.steps = run.steps.filter((step) => step.index !== stepIndex);
      run.steps.push({ index: stepIndex, attempt, text: "", ended: false });
      // Calls streamed by a void attempt went with it.
      if (attempt > 1) run.calls = run.calls.filter((call) => call.status !== "queued");
      break;
    }
    case "text_delta": {
      const step = event.step;
      const at = run.steps.findIndex((candidate) => step && candidate.index === step.index && candidate.attempt === step.attempt);
      const found = run.steps[at];
      if (found) run.steps[at] = { ...found, text: found.text + event.data.text };
      else if (!step) run.steps.push({ index: -1, attempt: 0, text: event.data.text, ended: false });
      break;
    }
    case "thinking_delta": {
      const step = event.step;
      const at = run.steps.findIndex((candidate) => step && candidate.index === step.index && candidate.attempt === step.attempt);
      const found = run.steps[at];
      // An encrypted block has nothing to show but that it was there.
      const text = event.data.redacted ? "[redacted reasoning]\n" : event.data.text;
      if (found) run.steps[at] = { ...found, thinking: (found.thinking ?? "") + text };
      break;
    }
    case "tool_begin":
      run.calls.push({
        callId: event.data.callId,
        name: event.data.name,
        status: "queued",
        argumentsText: "",
        fileChanges: [],
        stepIndex: event.step?.index ?? -1,
      });
      break;
    case "tool_update":
      updateCall(event.data.callId, (call) => ({
        argumentsText: call.argumentsText + (event.data.argumentsDelta ?? ""),
        ...(event.data.status ? { status: event.data.status } : {}),
      }));
      break;
    case "approval_request":
      updateCall(event.data.callId, () => ({
        status: "awaiting_approval",
        approvalId: event.data.approvalId,
        approvalReason: event.data.reason,
      }));
      break;
    case "approval_resolved":
      // An approved call runs next; a denied, expired or cancelled one ends with its tool_end.
      if (event.data.status === "approved") updateCall(event.data.callId, () => ({ status: "running" }));
      break;
    case "tool_end":
      updateCall(event.data.callId, () => ({
        status: event.data.status,
        preview: event.data.preview,
        ...(event.data.diff !== undefined ? { diff: event.data.diff } : {}),
        fileChanges: (event.data.fileChanges ?? []).map((change) => ({ id: change.id, path: change.path })),
      }));
      break;
    case "run_status":
      run.status = event.data.status;
      break;
    case "run_end":
      run.status = event.data.status;
      if (event.data.error) run.error = `${event.data.error.code}: ${event.data.error.message}`;
      break;
    case "step_end":
      run.steps = run.steps.map((step) => (step.index === event.data.stepIndex ? { ...step, ended: true } : step));
      break;
    case "subagent_start":
    case "tasks_updated":
    case "workspace_restored":
      break;
    // They concern the whole session's history: session-history.ts folds them.
    case "session_rewound":
    case "session_forked":
      break;
    default: {
      const exhaustive: never = event;
      return exhaustive;
    }
  }
  return runs;
}
