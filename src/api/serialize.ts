import type { projects, runs, sessions } from "../db/schema.js";

/** Row → response body; one place decides what leaves the service. */
export function serializeRun(run: typeof runs.$inferSelect) {
  return {
    id: run.id,
    sessionId: run.sessionId,
    status: run.status,
    ordinal: run.ordinal,
    stepIndex: run.stepIndex,
    error: run.error ?? null,
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
    activeRunId: session.activeRunId,
    parent: session.parentRunId ? { sessionId: session.parentSessionId, runId: session.parentRunId, callId: session.parentCallId } : null,
    depth: session.depth,
    tasks: session.tasks,
    deleted: session.deletedAt !== null,
    createdAt: session.createdAt.toISOString(),
  };
}

export function serializeProject(project: typeof projects.$inferSelect) {
  return { id: project.id, name: project.name, createdAt: project.createdAt.toISOString() };
}
