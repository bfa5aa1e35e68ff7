import type { CallGrant } from "../../approvals/gate-batch.js";
import type { CallRow } from "../../store/runs.js";
import type { JobOutcome } from "../job-context.js";
import type { BatchAttempt } from "./batch-attempt.js";
import type { RunnablePlan } from "./plan.js";
import { runCall, type RunCallDeps, type ToolContextFor } from "./run-call.js";
import { startCall, startWindow, type StartCallDeps } from "./start-calls.js";
import { maxParallelCalls, runWithLimit } from "./tool-lanes.js";

export type RunGroupsDeps = StartCallDeps & RunCallDeps;

/** `settle`: no commit could close the batch (an end-of-batch signal, siblings committing at once, calls awaiting approval). */
export type GroupsOutcome = { kind: "ended"; outcome: JobOutcome } | { kind: "settle"; endBatch: boolean };

interface GroupsState {
  endBatch: boolean;
  stale: boolean;
  finished: boolean;
}

/**
 * Phases 2 and 3 of the tool-batch job (process.ts): the plan's groups in model order (P2), at most
 * `maxParallelCalls` calls of a group at once (P3). Each group's first window starts together
 * (its first group's already has); each call runs and commits its own result, and the call
 * that commits last hands the run to its next step. Stops after an end-of-batch signal (P6),
 * a cancel, or when the batch was taken over.
 */
export async function runGroups(
  deps: RunGroupsDeps,
  attempt: BatchAttempt,
  plan: RunnablePlan,
  contextFor: ToolContextFor,
): Promise<GroupsOutcome> {
  const state: GroupsState = { endBatch: false, stale: false, finished: false };
  for (const [groupIndex, group] of plan.groups.entries()) {
    if (state.endBatch || state.stale || attempt.signal.aborted) break;
    if (groupIndex > 0 && !(await startWindow(deps, attempt, group))) {
      state.stale = true;
      break;
    }
    await runWithLimit(group, maxParallelCalls, (call) => runGroupCall(deps, attempt, { call, grants: plan.grants, contextFor }, state));
  }
  if (state.finished) return { kind: "ended", outcome: { kind: "committed", detail: "batch done" } };
  if (attempt.signal.aborted) return { kind: "ended", outcome: { kind: "cancelled" } };
  if (state.stale) return { kind: "ended", outcome: { kind: "stale" } };
  return { kind: "settle", endBatch: state.endBatch };
}

async function runGroupCall(
  deps: RunGroupsDeps,
  attempt: BatchAttempt,
  input: { call: CallRow; grants: ReadonlyMap<string, CallGrant>; contextFor: ToolContextFor },
  state: GroupsState,
): Promise<void> {
  const { call } = input;
  if (state.stale) return;
  const started = await startCall(deps, attempt, call);
  if (started === "stale") state.stale = true;
  if (started !== "started") return;
  const grant = input.grants.get(call.id) ?? { argumentsRaw: call.argumentsRaw, edited: false, network: false };
  const ran = await runCall(deps, attempt, call, grant, input.contextFor);
  if (ran === undefined) return;
  if (ran.committed === "stale") state.stale = true;
  else if (ran.committed === "finished") state.finished = true;
  if (ran.endBatch) state.endBatch = true;
}
