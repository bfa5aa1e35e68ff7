import type { StepRef } from "../core/events.js";
import { type CallId, type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import { admitOrHold } from "../runs/run-lifecycle.js";
import { newRunRefusal } from "../runs/quota-refusal.js";
import { StaleWorkError } from "../store/transact.js";
import type { SessionRow } from "../store/sessions.js";
import type { Store } from "../store/store.js";
import type { UnitOfWork } from "../unit-of-work/unit-of-work.js";
import type { Config } from "../config.js";
import type { Failpoints } from "../failpoints.js";
import type { SubAgentRequest, SubAgentStart } from "../tools/tool.js";
import { effectiveQuotas, fullAccessRefusal, readTenantSettings } from "../tenants/tenant-settings.js";
import { narrowLimits } from "./child-limits.js";
import type { OnInterrupted } from "../core/session.js";

export interface SubAgentParent {
  run: { id: RunId; tenantId: TenantId; sessionId: SessionId; fence: number; onInterrupted: OnInterrupted };
  session: SessionRow;
  /** The `agent` call, already `running` under this batch attempt's fence. */
  call: { id: CallId; callId: string };
  stepRef: StepRef;
  isTool: (name: string) => boolean;
}

/**
 * Starts a sub-agent in one transaction, fenced by the parent's batch attempt: the child
 * session and run, the child named on the parent's call, the child admitted like any run
 * (SPEC X5: its first step job in the outbox if its tenant has a slot, the parent's own slot
 * included, which a parent waiting on its child lends it; else it waits for one), and a
 * `subagent_start` event in the parent's session. Either all of it commits or none; a call
 * that a newer attempt owns starts nothing. A tenant past its queuedRuns, tokensPerDay or
 * storageBytes quota starts no child: the parent's model gets `quota_exceeded`.
 */
export async function startSubAgent(
  services: { store: Store; unitOfWork: UnitOfWork; config: Config; failpoints: Failpoints },
  parent: SubAgentParent,
  request: SubAgentRequest,
): Promise<SubAgentStart> {
  const narrowed = narrowLimits(parent.session, request, { maxDepth: services.config.runs.agentMaxDepth, isTool: parent.isTool });
  if (!narrowed.ok) return narrowed;
  const { limits } = narrowed;
  const { run, session, call } = parent;
  const settings = await readTenantSettings(services.store, run.tenantId);
  if (!settings) return { ok: false, errorCode: "tenant_gone", message: "The tenant is gone; no sub-agent was started." };
  if (limits.approvalMode === "full_access") {
    // Never wider than the parent, but the operator's grant may have been revoked since the parent started (S8).
    const refusal = fullAccessRefusal(services.config, settings);
    if (refusal) return { ok: false, errorCode: "full_access_not_granted", message: refusal };
  }
  const overQuota = await newRunRefusal(services.store.tenantAdmission, run.tenantId, effectiveQuotas(services.config, settings));
  if (overQuota) return { ok: false, errorCode: "quota_exceeded", message: `No sub-agent was started: ${overQuota.message}.` };
  const started = await services.unitOfWork
    .transactFenced(
      async (fx) => {
        if (!(await fx.store.runs.lockHeldRun(run))) throw new StaleWorkError();
        const child = await fx.store.sessions.insertSession({
          id: newId("ses"),
          tenantId: run.tenantId,
          projectId: session.projectId,
          approvalMode: limits.approvalMode,
          providerProfile: session.providerProfile,
          model: session.model,
          toolAllowList: limits.toolAllowList,
          runMode: limits.runMode,
          systemPrompt: request.instructions ?? null,
          parentSessionId: run.sessionId,
          parentRunId: run.id,
          parentCallId: call.callId,
          depth: limits.depth,
          // The parent's choice for interrupted calls holds for the work it delegates (D10).
          onInterrupted: run.onInterrupted,
        });
        if (!child) throw new Error("session insert returned nothing");
        const childRun = await fx.store.runs.insertRun({
          tenantId: run.tenantId,
          sessionId: child.id,
          input: request.task,
          onInterrupted: child.onInterrupted,
        });
        // Linked first: from here the parent waits on its child and lends it its slot.
        if (!(await fx.store.toolCalls.linkChildRun(call.id, run.fence, childRun.id))) throw new StaleWorkError();
        await admitOrHold(fx, childRun);
        await fx.emit(run.tenantId, run.sessionId, [
          {
            runId: run.id,
            step: parent.stepRef,
            body: { type: "subagent_start", callId: call.callId, childSessionId: child.id, childRunId: childRun.id, depth: limits.depth },
          },
        ]);
        return { ok: true as const, childSessionId: child.id, childRunId: childRun.id, depth: limits.depth };
      },
      { afterCommit: () => services.failpoints.hit("worker.after_subagent_start") },
    )
    .catch(async (error: unknown) => {
      // A failure after the commit (publishing, enqueuing: the outbox and the sweeper make up
      // for those) must not tell the model its sub-agent failed while the sub-agent runs.
      const committed = await services.store.toolCalls.childOfCall(call.id).catch(() => undefined);
      if (committed) return { ok: true as const, ...committed, depth: limits.depth };
      throw error;
    });
  return (
    started ?? { ok: false, errorCode: "stale", message: "This batch was taken over by another worker; the sub-agent was not started." }
  );
}
