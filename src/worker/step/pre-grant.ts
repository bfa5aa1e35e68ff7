import type { ApprovalPolicy } from "../../core/policy.js";
import type { AssistantToolCall } from "../../core/history.js";
import { setImmediate } from "node:timers/promises";
import { judge } from "../../approvals/gate-batch.js";
import { preparePolicies } from "../../gateway/compiled-policy.js";
import type { Verdict } from "../../gateway/verdict.js";
import type { ToolExecutor } from "../../tools/execute-tool-call.js";
import { maxParallelCalls, planLanes } from "../tool-batch/tool-lanes.js";
import type { ApprovalMode } from "../../core/session.js";

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
export async function preGrantFirstGroup(
  input: { approvalMode: ApprovalMode; workspaceDir: string },
  policies: readonly ApprovalPolicy[],
  executor: Pick<ToolExecutor, "parse" | "isParallel">,
  calls: readonly AssistantToolCall[],
): Promise<Map<number, { network: boolean }>> {
  await preparePolicies(policies, [...new Set(calls.map((call) => call.name))]);
  // Only the calls that can form the first group are judged (at most one past the widest
  // group), each bounded by the policy budget, with a turn of the event loop between them (S9).
  const verdicts: Verdict[] = [];
  for (const [index, call] of calls.slice(0, maxParallelCalls + 1).entries()) {
    if (index > 0) await setImmediate();
    const verdict = judge(input, policies, executor.parse(call));
    verdicts.push(verdict);
    if (verdict.decision !== "allow" || !executor.isParallel(call)) break;
  }
  const lanes = planLanes(
    verdicts.map((_, index) => index),
    (index) => verdicts[index]?.decision === "allow" && executor.isParallel(calls[index] as AssistantToolCall),
  );
  const first = lanes[0];
  const granted = new Map<number, { network: boolean }>();
  // Judging stopped at the first call that ends the group, or past the widest group (then not granted).
  if (!first || first.length > maxParallelCalls) return granted;
  for (const index of first) {
    const verdict = verdicts[index];
    if (verdict?.decision !== "allow") return new Map();
    granted.set(index, { network: verdict.network });
  }
  return granted;
}
