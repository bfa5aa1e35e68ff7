import type { Config } from "../config.js";
import type { messages, projects, runs, sessions, tenants } from "../db/schema.js";
import type { ModelUsage } from "../store/model-usage.js";
import { effectiveQuotas, effectiveToolLimits, tenantSettingsOf, toolUidOf } from "../tenants/tenant-settings.js";

const noUsage: ModelUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };

/** Row → response body; one place decides what leaves the service. `usage` is the run's summed step usage; none for a run that ran no step. */
export function serializeRun(run: typeof runs.$inferSelect, usage: ModelUsage = noUsage) {
  return {
    id: run.id,
    sessionId: run.sessionId,
    status: run.status,
    ordinal: run.ordinal,
    stepIndex: run.stepIndex,
    onInterrupted: run.onInterrupted,
    interruptions: run.interruptions,
    error: run.error ?? null,
    branchId: run.branchId,
    usage,
    createdAt: run.createdAt.toISOString(),
    endedAt: run.endedAt ? run.endedAt.toISOString() : null,
  };
}

export function serializeSession(session: typeof sessions.$inferSelect) {
  return {
    id: session.id,
    projectId: session.projectId,
    approvalMode: session.approvalMode,
    providerProfile: session.providerProfile,
    model: session.model,
    toolAllowList: session.toolAllowList ?? null,
    runMode: session.runMode,
    onInterrupted: session.onInterrupted,
    activeRunId: session.activeRunId,
    lastEventSeq: session.eventSeq,
    parent: session.parentRunId ? { sessionId: session.parentSessionId, runId: session.parentRunId, callId: session.parentCallId } : null,
    depth: session.depth,
    tasks: session.tasks,
    forkedFrom: session.forkedFrom,
    deleted: session.deletedAt !== null,
    createdAt: session.createdAt.toISOString(),
  };
}

/** A history message as `GET /v1/sessions/:id/messages` and a branch's messages answer it. */
export function serializeMessage(row: typeof messages.$inferSelect) {
  return {
    id: row.id,
    runId: row.runId,
    role: row.role,
    content: row.content as unknown as Record<string, unknown>,
    createdAt: row.createdAt.toISOString(),
  };
}

export function serializeProject(project: typeof projects.$inferSelect) {
  return { id: project.id, name: project.name, createdAt: project.createdAt.toISOString() };
}

/** A tenant as the operator sees it (admin API only): never shown to tenants' own keys. */
export function serializeTenant(tenant: typeof tenants.$inferSelect, config: Pick<Config, "sandbox" | "toolLimits" | "quotas">) {
  const settings = tenantSettingsOf(tenant);
  return {
    id: tenant.id,
    name: tenant.name,
    createdAt: tenant.createdAt.toISOString(),
    fullAccess: settings.fullAccess,
    limits: { ...settings.limits },
    effectiveLimits: effectiveToolLimits(config, settings),
    quotas: { ...settings.quotas },
    effectiveQuotas: effectiveQuotas(config, settings),
    toolUid: toolUidOf(config, settings),
  };
}
