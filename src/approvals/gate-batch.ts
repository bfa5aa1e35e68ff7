import { and, eq, sql } from "drizzle-orm";
import type { NewEvent, StepRef } from "../core/events.js";
import type { ApprovalPolicy } from "../core/policy.js";
import { approvals, toolCalls, type ApprovalMode } from "../db/schema.js";
import { judgeCall } from "../gateway/judge-call.js";
import type { Verdict } from "../gateway/verdict.js";
import { newId } from "../ids.js";
import { answerCall } from "../runs/answer-call.js";
import type { Effects } from "../runs/transact.js";
import type { Services } from "../services.js";
import { projectWorkspaceFiles } from "../workspace/project-workspace.js";
import type { ApprovalSubject, ToolRefusal } from "../tools/tool.js";

type CallRow = typeof toolCalls.$inferSelect;
type ParsedCall = ReturnType<Services["executor"]["parse"]>;

/** What a call that may run runs with. */
export interface CallGrant {
  /** The model's arguments, or the decider's edit (X3). */
  argumentsRaw: string;
  edited: boolean;
  /** Whether its sandbox keeps the network (S3). */
  network: boolean;
}

export interface GateInput {
  run: { id: string; tenantId: string; sessionId: string; ordinal: number };
  approvalMode: ApprovalMode;
  projectId: string;
  workspaceDir: string;
  /** The batch's queued calls, in model order. */
  calls: readonly CallRow[];
  stepRef: StepRef;
}

export interface GateResult {
  /** Calls that may run, by tool-call row id. */
  grants: Map<string, CallGrant>;
  /** Calls this gate sent for approval. */
  asked: Set<string>;
}

interface StoredApproval {
  toolCallId: string;
  status: string;
  editedArguments: string | null;
  grantsNetwork: boolean;
}

/**
 * Puts the queued calls of a batch through the approval gateway (SPEC S1, S2,
 * S5), inside the transaction that claimed the batch. A call a human already
 * approved runs as approved; any other call is judged now. Denied calls get
 * their `denied` result at once; a call that asks gets its approval row in the
 * same transaction as its `awaiting_approval` status (X3), announced by event.
 * Answers the grants of the calls that may run.
 */
export async function gateBatch(fx: Effects, services: Pick<Services, "config" | "executor">, input: GateInput): Promise<GateResult> {
  const grants = new Map<string, CallGrant>();
  const asked = new Set<string>();
  if (input.calls.length === 0) return { grants, asked };
  const { policies, decided } = await loadPolicyAndDecisions(fx, input);
  const events: NewEvent[] = [];
  for (const call of input.calls) {
    const approval = decided.get(call.id);
    if (approval) {
      // queued with an approval row means approved: every other decision closes the call.
      grants.set(call.id, {
        argumentsRaw: approval.editedArguments ?? call.argumentsRaw,
        edited: approval.editedArguments !== null,
        network: approval.grantsNetwork,
      });
      continue;
    }
    const parsed = services.executor.parse(call);
    const verdict = judge(input, policies, parsed);
    if (verdict.decision === "allow") {
      grants.set(call.id, { argumentsRaw: call.argumentsRaw, edited: false, network: verdict.network });
    } else if (verdict.decision === "deny") {
      await denyCall(fx, input, call, `Denied by policy: ${verdict.reason}`, "denied");
    } else {
      // Never ask a human about a call that cannot run whatever they decide (S11): deny it with the tool's own reason.
      const refusal = parsed.ok ? await refusalOf(services.config.workspacesDir, input, parsed) : null;
      if (refusal) {
        await denyCall(fx, input, call, `Refused: ${refusal.message}`, refusal.code);
        continue;
      }
      events.push(...(await requestApproval(fx, services, input, policies, call, verdict, parsed.ok ? parsed : null)));
      asked.add(call.id);
    }
  }
  if (events.length > 0) await fx.emit(input.run.tenantId, input.run.sessionId, events);
  return { grants, asked };
}

/**
 * The gateway's verdict for one call, from the executor's parse of it; a call
 * that cannot run at all is let through, so the executor answers why.
 */
export function judge(input: Pick<GateInput, "approvalMode" | "workspaceDir">, policies: readonly ApprovalPolicy[], parsed: ParsedCall): Verdict {
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

/** The tenant's and the project's policies, and the approvals already decided for these calls: one statement. */
async function loadPolicyAndDecisions(
  fx: Effects,
  input: GateInput,
): Promise<{ policies: ApprovalPolicy[]; decided: Map<string, StoredApproval> }> {
  const ids = sql.join(
    input.calls.map((call) => sql`${call.id}`),
    sql`, `,
  );
  const result = await fx.tx.execute<{ tenant_policy: ApprovalPolicy; project_policy: ApprovalPolicy; decided: StoredApproval[] }>(sql`
    select t.policy as tenant_policy, p.policy as project_policy,
      coalesce((
        select jsonb_agg(jsonb_build_object('toolCallId', a.tool_call_id, 'status', a.status,
                                            'editedArguments', a.edited_arguments, 'grantsNetwork', a.grants_network))
        from approvals a where a.tool_call_id in (${ids}) and a.status = 'approved'
      ), '[]'::jsonb) as decided
    from projects p join tenants t on t.id = p.tenant_id
    where p.id = ${input.projectId}
  `);
  const row = result.rows[0];
  if (!row) throw new Error(`project ${input.projectId} vanished`);
  return {
    policies: [row.tenant_policy, row.project_policy],
    decided: new Map(row.decided.map((approval) => [approval.toolCallId, approval])),
  };
}

async function denyCall(fx: Effects, input: GateInput, call: CallRow, text: string, errorCode: string): Promise<void> {
  const content = [{ type: "text" as const, text }];
  const [denied] = await fx.tx
    .update(toolCalls)
    .set({ status: "denied", isError: true, errorCode, result: content, endedAt: sql`now()` })
    .where(and(eq(toolCalls.id, call.id), eq(toolCalls.status, "queued")))
    .returning({ id: toolCalls.id });
  if (denied) await answerCall(fx, input.run, call, { status: "denied", isError: true, errorCode, content }, input.stepRef);
}

async function requestApproval(
  fx: Effects,
  services: Pick<Services, "config" | "executor">,
  input: GateInput,
  policies: readonly ApprovalPolicy[],
  call: CallRow,
  verdict: Extract<Verdict, { decision: "ask" }>,
  parsed: Extract<ParsedCall, { ok: true }> | null,
): Promise<NewEvent[]> {
  const [moved] = await fx.tx
    .update(toolCalls)
    .set({ status: "awaiting_approval" })
    .where(and(eq(toolCalls.id, call.id), eq(toolCalls.status, "queued")))
    .returning({ id: toolCalls.id });
  if (!moved) return [];
  const ttlSeconds = policies.reduce<number>((ttl, policy) => policy.approvalTtlSeconds ?? ttl, services.config.approvalTtlSeconds);
  const expiresAt = new Date(Date.now() + ttlSeconds * 1000);
  const id = newId("apr");
  await fx.tx.insert(approvals).values({
    id,
    tenantId: input.run.tenantId,
    sessionId: input.run.sessionId,
    runId: input.run.id,
    toolCallId: call.id,
    status: "pending",
    requestReason: verdict.reason,
    grantsNetwork: verdict.network,
    displayDiff: parsed ? await previewOf(services.config.workspacesDir, input, parsed) : null,
    expiresAt,
  });
  return [
    { runId: input.run.id, step: input.stepRef, body: { type: "tool_update", callId: call.callId, status: "awaiting_approval" } },
    {
      runId: input.run.id,
      step: input.stepRef,
      body: { type: "approval_request", approvalId: id, callId: call.callId, name: call.name, reason: verdict.reason, expiresAt: expiresAt.toISOString() },
    },
  ];
}

/** What the tool would refuse this call with before running (a path outside the workspace, protected metadata), or null. */
async function refusalOf(workspacesDir: string, input: GateInput, parsed: Extract<ParsedCall, { ok: true }>): Promise<ToolRefusal | null> {
  if (!parsed.tool.refusal) return null;
  return parsed.tool.refusal({ workspace: projectWorkspaceFiles(workspacesDir, input.workspaceDir), approvalMode: input.approvalMode }, parsed.args as never);
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
