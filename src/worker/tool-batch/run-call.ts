import type { CallGrant } from "../../approvals/gate-batch.js";
import { storeResultArtifacts } from "../../artifacts/store-result-artifacts.js";
import type { CallRow } from "../../store/runs.js";
import type { StoredToolResult, ToolContext } from "../../tools/tool.js";
import type { JobDeps } from "../job-deps.js";
import { observeToolCall } from "../job-telemetry.js";
import type { BatchAttempt } from "./batch-attempt.js";
import { commitCall, type CommitCallDeps, type CommittedCall } from "./commit-call.js";

export type RunCallDeps = Pick<JobDeps, "metrics" | "tracing" | "store" | "callLayers" | "failpoints"> & CommitCallDeps;

/** The tool context of one call of this attempt (`createToolContext`, bound to the batch). */
export type ToolContextFor = (call: CallRow, grant: CallGrant) => ToolContext;

/**
 * Phase 3 of the tool-batch job (process.ts), per call: the tool runs outside any transaction
 * (`src/tools/execute-tool-call.ts`: exposure, parse, schema, run; a throw becomes an
 * is_error result), then its result is committed (commit-call.ts). Undefined for an
 * `agent` call whose child will deliver its result (A1).
 */
export async function runCall(
  deps: RunCallDeps,
  attempt: BatchAttempt,
  call: CallRow,
  grant: CallGrant,
  contextFor: ToolContextFor,
): Promise<{ committed: CommittedCall; endBatch: boolean } | undefined> {
  const { run } = attempt;
  const executed = await observeToolCall(deps, { tenantId: run.tenantId, callId: call.callId, name: call.name }, () =>
    attempt.tools.executor.execute(contextFor(call, grant), { callId: call.callId, name: call.name, argumentsRaw: grant.argumentsRaw }),
  );
  // A crash test's kill: the tool's work is done, its result not stored.
  deps.failpoints.hit("worker.tool_ran");
  // A sub-agent's end delivers this call's result (A1); the batch settles around it.
  if (executed.awaitChildRun !== undefined && !executed.isError) return undefined;
  // A command's applied layer, or a door write's journal, holds its file changes' records until they are stored with the result (SPEC X7, F1, D3).
  const layers = deps.callLayers.ok ? deps.callLayers.layers : null;
  try {
    // Bytes become artifact references before anything is stored or emitted (I1, I2).
    const result = withEditNote(
      grant,
      await storeResultArtifacts(deps.store, { tenantId: run.tenantId, sessionId: run.sessionId }, executed),
    );
    const committed = await commitCall(deps, run, call, result, { stepRef: attempt.stepRef, mayClose: !attempt.checkpoint });
    layers?.recorded(call.id);
    return { committed, endBatch: result.endBatch === true };
  } catch (error) {
    layers?.giveUp(call.id);
    throw error;
  }
}

/** The model is told when a human changed what it asked for (X3), so its next step reasons about what really ran. */
function withEditNote(grant: CallGrant, result: StoredToolResult): StoredToolResult {
  if (!grant.edited) return result;
  const note = `Note: a reviewer edited the arguments before approving; the call ran with ${grant.argumentsRaw}`;
  return { ...result, content: [{ type: "text", text: note }, ...result.content] };
}
