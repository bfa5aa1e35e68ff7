import type { NewEvent, StepRef } from "../core/events.js";
import type { ApprovalPolicy } from "../core/policy.js";
import { setImmediate } from "node:timers/promises";
import { judgeCall } from "../gateway/judge-call.js";
import { preparePolicies } from "../gateway/compiled-policy.js";
import type { Verdict } from "../gateway/verdict.js";
import { type ProjectId, type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import type { StoredApproval } from "../store/runs.js";
import type { Effects } from "../unit-of-work/unit-of-work.js";
import type { Config } from "../config.js";
import type { ToolExecutor } from "../tools/execute-tool-call.js";
import { projectWorkspaceFiles } from "../workspace/project-workspace.js";
import type { ApprovalSubject, ToolRefusal } from "../tools/tool.js";
import type { ApprovalMode } from "../core/session.js";

type CallRow = import("../store/runs.js").CallRow;
type ParsedCall = ReturnType<ToolExecutor["parse"]>;

/** What judging a batch needs: the deployment's settings and the executor that parses each call. */
export interface GateDeps {
  config: Config;
  executor: ToolExecutor;
}

/** What a call that may run runs with. */
export interface CallGrant {
  /** The model's arguments, or the decider's edit (X3). */
  argumentsRaw: string;
  edited: boolean;
  /** Whether its sandbox keeps the network (S3). */
  network: boolean;
}

export interface GateInput {
  run: { id: RunId; tenantId: TenantId; sessionId: SessionId; ordinal: number };
  approvalMode: ApprovalMode;
  projectId: ProjectId;
  workspaceDir: string;
  /** The batch's queued calls, in model order. */
  calls: readonly CallRow[];
  stepRef: StepRef;
}

export interface GateResult {
  /** Calls that may run, by tool-call row id. */
  grants: Map<string, CallGrant>;
  /** Calls this gate sends for approval. */
  asked: Set<string>;
  /** What the gate decided to write: denials and requests for approval; usually nothing. */
  writes: GateWrite[];
}

export type GateWrite =
  | { kind: "deny"; call: CallRow; text: string; errorCode: string }
  | { kind: "ask"; call: CallRow; reason: string; network: boolean; displayDiff: string | null; ttlSeconds: number };

/** The policies in force and the approvals already given, as the batch's claim read them (S1). */
export interface GateRules {
  policies: readonly ApprovalPolicy[];
  decided: ReadonlyMap<string, StoredApproval>;
}

/**
 * Puts the queued calls of a batch through the approval gateway (SPEC S1, S2,
 * S5). A call a human already approved runs as approved; any other call is
 * judged now against the rules its batch's claim read. Writes nothing: denied
 * calls and calls that ask are returned as `writes`, which `applyGateWrites`
 * commits under the batch's fence; most batches have none.
 */
export async function judgeBatch(services: GateDeps, input: GateInput, rules: GateRules): Promise<GateResult> {
  const grants = new Map<string, CallGrant>();
  const asked = new Set<string>();
  const writes: GateWrite[] = [];
  await preparePolicies(rules.policies, [...new Set(input.calls.map((call) => call.name))]);
  let judged = 0;
  for (const call of input.calls) {
    const approval = rules.decided.get(call.id);
    if (approval) {
      // queued with an approval row means approved: every other decision closes the call.
      grants.set(call.id, {
        argumentsRaw: approval.editedArguments ?? call.argumentsRaw,
        edited: approval.editedArguments !== null,
        network: approval.grantsNetwork,
      });
      continue;
    }
    // Each verdict is bounded by the policy budget (S9); the event loop gets a turn between them.
    if (judged++ > 0) await setImmediate();
    const parsed = services.executor.parse(call);
    const verdict = judge(input, rules.policies, parsed);
    if (verdict.decision === "allow") {
      grants.set(call.id, { argumentsRaw: call.argumentsRaw, edited: false, network: verdict.network });
    } else if (verdict.decision === "deny") {
      writes.push({ kind: "deny", call, text: `Denied by policy: ${verdict.reason}`, errorCode: "denied" });
    } else {
      // Never ask a human about a call that cannot run whatever they decide (S11): deny it with the tool's own reason.
      const refusal = parsed.ok ? await refusalOf(services.config.workspaces.dir, input, parsed) : null;
      if (refusal) {
        writes.push({ kind: "deny", call, text: `Refused: ${refusal.message}`, errorCode: refusal.code });
        continue;
      }
      const ttlSeconds = rules.policies.reduce<number>(
        (ttl, policy) => policy.approvalTtlSeconds ?? ttl,
        services.config.tools.approvalTtlSeconds,
      );
      const displayDiff = parsed.ok ? await previewOf(services.config.workspaces.dir, input, parsed) : null;
      writes.push({ kind: "ask", call, reason: verdict.reason, network: verdict.network, displayDiff, ttlSeconds });
      asked.add(call.id);
    }
  }
  return { grants, asked, writes };
}

/** Commits the gate's denials (with their results) and requests for approval (with their rows, X3), in the caller's transaction. */
export async function applyGateWrites(fx: Effects, input: Pick<GateInput, "run" | "stepRef">, writes: readonly GateWrite[]): Promise<void> {
  const events: NewEvent[] = [];
  for (const write of writes) {
    if (write.kind === "deny") {
      const content = [{ type: "text" as const, text: write.text }];
      const answered = await fx.store.toolCalls.answerCall({
        run: input.run,
        call: write.call,
        outcome: { status: "denied", isError: true, errorCode: write.errorCode, content },
        step: input.stepRef,
      });
      fx.track(answered.events);
      continue;
    }
    const { call } = write;
    const expiresAt = new Date(Date.now() + write.ttlSeconds * 1000);
    const id = newId("apr");
    const moved = await fx.store.toolCalls.askApproval(call.id, {
      id,
      tenantId: input.run.tenantId,
      sessionId: input.run.sessionId,
      runId: input.run.id,
      requestReason: write.reason,
      grantsNetwork: write.network,
      displayDiff: write.displayDiff,
      expiresAt,
    });
    if (!moved) continue;
    events.push(
      { runId: input.run.id, step: input.stepRef, body: { type: "tool_update", callId: call.callId, status: "awaiting_approval" } },
      {
        runId: input.run.id,
        step: input.stepRef,
        body: {
          type: "approval_request",
          approvalId: id,
          callId: call.callId,
          name: call.name,
          reason: write.reason,
          expiresAt: expiresAt.toISOString(),
        },
      },
    );
  }
  if (events.length > 0) await fx.emit(input.run.tenantId, input.run.sessionId, events);
}

/**
 * The gateway's verdict for one call, from the executor's parse of it; a call
 * that cannot run at all is let through, so the executor answers why. Await
 * `preparePolicies` first, so that no rule is compiled here (S9).
 */
export function judge(
  input: Pick<GateInput, "approvalMode" | "workspaceDir">,
  policies: readonly ApprovalPolicy[],
  parsed: ParsedCall,
): Verdict {
  if (!parsed.ok) return { decision: "allow", network: false };
  const subject: ApprovalSubject = parsed.tool.approvalSubject?.(parsed.args as never) ?? { kind: "none" };
  return judgeCall({
    mode: input.approvalMode,
    tool: { name: parsed.tool.name, sideEffect: parsed.tool.sideEffect },
    subject,
    workspaceDir: input.workspaceDir,
    policies,
  });
}

/** What the tool would refuse this call with before running (a path outside the workspace, protected metadata), or null. */
async function refusalOf(workspacesDir: string, input: GateInput, parsed: Extract<ParsedCall, { ok: true }>): Promise<ToolRefusal | null> {
  if (!parsed.tool.refusal) return null;
  return parsed.tool.refusal(
    { workspace: projectWorkspaceFiles(workspacesDir, input.workspaceDir), approvalMode: input.approvalMode },
    parsed.args as never,
  );
}

/** The change a write or edit would make, for the approver; never fails the gate. */
async function previewOf(workspacesDir: string, input: GateInput, parsed: Extract<ParsedCall, { ok: true }>): Promise<string | null> {
  if (!parsed.tool.previewDiff) return null;
  try {
    return await parsed.tool.previewDiff({ workspace: projectWorkspaceFiles(workspacesDir, input.workspaceDir) }, parsed.args as never);
  } catch {
    return null;
  }
}
