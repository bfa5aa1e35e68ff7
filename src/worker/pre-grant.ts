import type { ApprovalPolicy } from "../core/policy.js";
import type { AssistantToolCall } from "../core/history.js";
import { judge } from "../approvals/gate-batch.js";
import type { ToolExecutor } from "../tools/execute-tool-call.js";
import { maxParallelCalls, planLanes } from "./tool-lanes.js";
import type { ApprovalMode } from "../core/session.js";

/**
 * The calls a batch may start with its claim (by call index, with their grants): judged by
 * the step's commit with the policies the step's claim read, so the batch's claim marks them
 * `running` itself instead of in a statement of its own. Only a whole first group of at most
 * `maxParallelCalls`, every call of it allowed: the group the batch would start first anyway
 * (P1-P3). Anything else (a call that asks, is denied, or a wider group) is left to the
 * batch's own gate at its claim, which judges with the policies current then. So a policy
 * changed while a model streams applies from that step's batch, except to the calls of its
 * first group when all of them were allowed before; from the next step at the latest.
 */
export function preGrantFirstGroup(
  input: { approvalMode: ApprovalMode; workspaceDir: string },
  policies: readonly ApprovalPolicy[],
  executor: Pick<ToolExecutor, "parse" | "isParallel">,
  calls: readonly AssistantToolCall[],
): Map<number, { network: boolean }> {
  const verdicts = calls.map((call) => judge(input, policies, executor.parse(call)));
  const lanes = planLanes(
    calls.map((_, index) => index),
    (index) => verdicts[index]?.decision === "allow" && executor.isParallel(calls[index] as AssistantToolCall),
  );
  const first = lanes[0];
  const granted = new Map<number, { network: boolean }>();
  if (!first || first.length > maxParallelCalls) return granted;
  for (const index of first) {
    const verdict = verdicts[index];
    if (verdict?.decision !== "allow") return new Map();
    granted.set(index, { network: verdict.network });
  }
  return granted;
}
