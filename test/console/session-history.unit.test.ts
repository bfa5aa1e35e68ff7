import { describe, expect, it } from "vitest";
import type { FoyaEvent } from "../../packages/client/src/index.js";
import { inHistory } from "../../packages/console/src/rewind-fold.js";
import { applySessionEvent, emptyHistory, type SessionHistory } from "../../packages/console/src/session-history.js";

/**
 * The console's session page folds the whole event log: a rewind sets runs and steps aside (they
 * leave the page and come back with the branch), a fork says where the session came from.
 */
let seq = 0;
function event(runId: string, body: { type: string; [key: string]: unknown }, stepIndex?: number): FoyaEvent {
  const { type, ...data } = body;
  seq += 1;
  const step = stepIndex === undefined ? null : { index: stepIndex, attempt: 1 };
  return { seq, sessionId: "ses_x", runId, step, type, data, at: new Date(0).toISOString() } as unknown as FoyaEvent;
}

/** A run of `steps` steps, one write call each, to its end. */
function run(runId: string, ordinal: number, steps: number): FoyaEvent[] {
  const events = [event(runId, { type: "run_start", runId, ordinal })];
  for (let index = 0; index < steps; index++) {
    const callId = `${runId}-call-${index}`;
    events.push(
      event(runId, { type: "step_start", stepIndex: index, attempt: 1, tools: [] }, index),
      event(runId, { type: "text_delta", text: `step ${index}` }, index),
      event(runId, { type: "tool_begin", callId, name: "write", callIndex: 0, status: "queued" }, index),
      event(runId, { type: "step_end", stepIndex: index, attempt: 1, finishReason: "tool_calls", toolCalls: 1 }, index),
      event(runId, { type: "tool_end", callId, name: "write", status: "succeeded", isError: false, preview: "ok" }, index),
    );
  }
  events.push(event(runId, { type: "run_end", status: "completed" }));
  return events;
}

function rewound(
  runId: string,
  branchId: string,
  at: { runOrdinal: number; stepIndex: number | null },
  restoredBranchId: string | null = null,
) {
  const body = {
    type: "session_rewound",
    branchId,
    at,
    checkpointId: "chk_x",
    tipCheckpointId: null,
    restoredBranchId,
    messagesSetAside: 3,
    notUndone: [],
  };
  return event(runId, body);
}

const fold = (events: FoyaEvent[], from: SessionHistory = emptyHistory) => events.reduce(applySessionEvent, from);

/** What the page shows: each run in the history with the steps still in it. */
function shown(history: SessionHistory): Array<[string, number[], number]> {
  return history.runs
    .filter(inHistory)
    .map((view) => [view.runId, view.steps.filter(inHistory).map((step) => step.index), view.calls.filter(inHistory).length]);
}

describe("the console's session history", () => {
  it("W2: a rewind inside a run sets its later steps and the later runs aside; bringing the branch back sets aside what came since", () => {
    const before = fold([...run("run_a", 1, 3), ...run("run_b", 2, 1)]);
    expect(shown(before)).toEqual([
      ["run_a", [0, 1, 2], 3],
      ["run_b", [0], 1],
    ]);
    const cut = fold([rewound("run_a", "brn_1", { runOrdinal: 1, stepIndex: 0 })], before);
    expect(shown(cut)).toEqual([["run_a", [0], 1]]);
    expect(cut.lastRewind).toMatchObject({ branchId: "brn_1", at: { runOrdinal: 1, stepIndex: 0 }, notUndone: 0 });

    // A new run after the point, then back to the branch: the new run goes, what brn_1 set aside returns.
    const resent = fold(run("run_c", 3, 1), cut);
    expect(shown(resent).map(([runId]) => runId)).toEqual(["run_a", "run_c"]);
    const back = fold([rewound("run_a", "brn_2", { runOrdinal: 1, stepIndex: 0 }, "brn_1")], resent);
    expect(shown(back)).toEqual([
      ["run_a", [0, 1, 2], 3],
      ["run_b", [0], 1],
    ]);
    expect(back.runs.find((view) => view.runId === "run_c")?.setAsideBy).toBe("brn_2");
  });

  it("W2: a rewind to a first run's user message (the start) sets every run aside; a fork's log says where it came from", () => {
    const history = fold([...run("run_a", 1, 1), ...run("run_b", 2, 1), rewound("run_a", "brn_1", { runOrdinal: 0, stepIndex: null })]);
    expect(shown(history)).toEqual([]);
    const forked = fold([
      ...run("run_f", 1, 2),
      event("run_f", {
        type: "session_forked",
        fromSessionId: "ses_source",
        at: { runOrdinal: 1, stepIndex: 1 },
        checkpointId: "chk_x",
        notUndone: [],
      }),
    ]);
    expect(forked.forkedFrom).toEqual({ sessionId: "ses_source", at: { runOrdinal: 1, stepIndex: 1 }, notUndone: 0 });
    expect(shown(forked)).toEqual([["run_f", [0, 1], 2]]);
  });
});
