import type { StepRef } from "../core/events.js";
import { newId } from "../ids.js";
import { activateRun } from "../runs/run-lifecycle.js";
import { StaleWorkError, transactFenced, type TransactDeps } from "../store/transact.js";
import { insertRun, lockHeldRun } from "../store/runs.js";
import { insertSession, type SessionRow } from "../store/sessions.js";
import { childOfCall, linkChildRun } from "../store/tool-calls.js";
import type { Failpoints } from "../failpoints.js";
import type { SubAgentRequest, SubAgentStart } from "../tools/tool.js";
import { fullAccessRefusal, readTenantSettings } from "../tenants/tenant-settings.js";
import { narrowLimits } from "./child-limits.js";
import type { OnInterrupted } from "../core/session.js";

export interface SubAgentParent {
  run: { id: string; tenantId: string; sessionId: string; fence: number; onInterrupted: OnInterrupted };
  session: SessionRow;
  /** The `agent` call, already `running` under this batch attempt's fence. */
  call: { id: string; callId: string };
  stepRef: StepRef;
  isTool: (name: string) => boolean;
}

/**
 * Starts a sub-agent in one transaction, fenced by the parent's batch attempt: the child
 * session and run, the child's first step job (outbox), the child named on the parent's
 * call, and a `subagent_start` event in the parent's session. Either all of it commits or
 * none; a call that a newer attempt owns starts nothing.
 */
export async function startSubAgent(
  services: TransactDeps & { failpoints: Failpoints },
  parent: SubAgentParent,
  request: SubAgentRequest,
): Promise<SubAgentStart> {
  const narrowed = narrowLimits(parent.session, request, { maxDepth: services.config.runs.agentMaxDepth, isTool: parent.isTool });
  if (!narrowed.ok) return narrowed;
  const { limits } = narrowed;
  const { run, session, call } = parent;
  if (limits.approvalMode === "full_access") {
    // Never wider than the parent, but the operator's grant may have been revoked since the parent started (S8).
    const settings = await readTenantSettings(services.db.db, run.tenantId);
    const refusal = settings ? fullAccessRefusal(services.config, settings) : "Full Access is not granted: the tenant is gone.";
    if (refusal) return { ok: false, errorCode: "full_access_not_granted", message: refusal };
  }
  const started = await transactFenced(
    services,
    async (fx) => {
      if (!(await lockHeldRun(fx.tx, run))) throw new StaleWorkError();
      const child = await insertSession(fx.tx, {
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
      const childRun = await insertRun(fx.tx, {
        tenantId: run.tenantId,
        sessionId: child.id,
        input: request.task,
        onInterrupted: child.onInterrupted,
      });
      await activateRun(fx, childRun);
      if (!(await linkChildRun(fx.tx, call.id, run.fence, childRun.id))) throw new StaleWorkError();
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
  ).catch(async (error: unknown) => {
    // A failure after the commit (publishing, enqueuing: the outbox and the sweeper make up
    // for those) must not tell the model its sub-agent failed while the sub-agent runs.
    const committed = await childOfCall(services.db.db, call.id).catch(() => undefined);
    if (committed) return { ok: true as const, ...committed, depth: limits.depth };
    throw error;
  });
  return (
    started ?? { ok: false, errorCode: "stale", message: "This batch was taken over by another worker; the sub-agent was not started." }
  );
}
