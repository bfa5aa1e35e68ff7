import type { BranchAt, NotUndoneCall } from "../core/branch.js";
import type { NewEvent } from "../core/events.js";
import { newId, type ProjectId, type RunId, type SessionId, type TenantId } from "../ids.js";
import type { PointRun } from "../store/branches.js";
import type { CheckpointRow } from "../store/checkpoints.js";
import type { SessionRow } from "../store/sessions.js";
import type { Effects } from "../unit-of-work/unit-of-work.js";
import { type BranchDeps, liveSessionWithProject, notUndoneAfter, notUndoneInEvents, treeTotals } from "./branch-deps.js";
import { resolvePoint, type ResolvedPoint } from "./resolve-point.js";
import { hostWorkspacePath } from "../workspace/host-copies.js";

export interface Forked {
  session: SessionRow;
  projectId: ProjectId;
  /** The fork's first checkpoint: the source's tree at the point, rebuilt into its folder before its first batch. */
  checkpoint: CheckpointRow;
  /** The source's runs as copied, in order. */
  runs: Array<{ from: RunId; to: RunId; ordinal: number; cancelled: boolean }>;
  notUndone: NotUndoneCall[];
}

/**
 * Forks a session at a point of its committed history (SPEC W2): a new project and session with
 * the source's settings and policies, its history up to the point (runs, messages, events,
 * renumbered), and the workspace as it stood then: a copy of the point's checkpoint, which the
 * fork's first batch rebuilds its folder from. No tool runs again. A running source forks from
 * what is committed: a step counts once its calls' results are in. No folder is made here (SPEC
 * W3): the host the fork is placed on makes it, from that checkpoint, at its first batch (the
 * project's reset order).
 */
export async function forkSession(
  deps: BranchDeps,
  input: { tenantId: TenantId; sessionId: SessionId; at: Exclude<BranchAt, { branchId: unknown }> },
): Promise<Forked> {
  const { session, project } = await liveSessionWithProject(deps.store, input.tenantId, input.sessionId);
  const scope = { tenantId: input.tenantId, sessionId: session.id, projectId: project.id };
  const resolved = await resolvePoint(deps.store.branches, scope, input.at);
  const tree = (await deps.store.branches.checkpointAtPoint(scope, resolved.point)) ?? null;
  const notUndone = await notUndoneAfter(deps, { ...scope, fullAccess: session.approvalMode === "full_access" }, resolved.point);
  const cut = resolved.run ? await cutOf(deps, scope, resolved.run, resolved.point.stepIndex) : null;
  const totals = await treeTotals(deps.store, input.tenantId, tree);
  const projectId = newId("prj");
  const workspacePath = hostWorkspacePath(deps.config.workspaces.dir, { tenantId: input.tenantId, projectId });
  return deps.unitOfWork.transact(async (fx) => {
    const inserted = await fx.store.projects.insertProject({
      id: projectId,
      tenantId: input.tenantId,
      name: `${project.name} (fork)`.slice(0, 200),
      workspacePath,
      policy: project.policy,
    });
    if (!inserted) throw new Error("project insert returned nothing");
    const fork = await fx.store.sessions.insertSession({
      ...settingsOf(session),
      id: newId("ses"),
      tenantId: input.tenantId,
      projectId,
      forkedFrom: { sessionId: session.id, at: resolved.point, checkpointId: tree },
    });
    if (!fork) throw new Error("session insert returned nothing");
    const copied = await fx.store.branches.copyHistory({ tenantId: input.tenantId, from: session.id, to: fork.id }, resolved.point, cut);
    const last = copied.runs.at(-1);
    await fx.store.branches.setCopiedCounters(fork.id, { runCount: last?.ordinal ?? 0, eventSeq: copied.events });
    const checkpoint = await fx.store.checkpoints.copyCheckpoint(tree, {
      tenantId: input.tenantId,
      projectId,
      sessionId: fork.id,
      runId: last?.to ?? null,
      stepIndex: resolved.point.stepIndex,
      reason: "fork",
      ...totals,
    });
    await fx.store.projects.orderWorkspaceReset(input.tenantId, projectId, checkpoint.id);
    await announceFork(fx, { tenantId: input.tenantId, sessionId: fork.id, from: session.id }, { resolved, checkpoint, copied, notUndone });
    return { session: { ...fork, runCount: last?.ordinal ?? 0 }, projectId, checkpoint, runs: copied.runs, notUndone };
  });
}

/** The settings a fork keeps: everything a client chose for the session, not its state. */
function settingsOf(session: SessionRow) {
  const { approvalMode, providerProfile, model, toolAllowList, runMode, systemPrompt, tasks, onInterrupted } = session;
  return { approvalMode, providerProfile, model, toolAllowList, runMode, systemPrompt, tasks, onInterrupted };
}

/**
 * The run the point lies in, when the fork takes only part of it (the point is inside it, or an
 * earlier rewind cut it): its events are copied up to its last step kept.
 */
async function cutOf(
  deps: BranchDeps,
  scope: { tenantId: TenantId; sessionId: SessionId },
  run: PointRun,
  stepIndex: number | null,
): Promise<{ ordinal: number; lastSeq: number } | null> {
  const kept = await deps.store.branches.runCutAt(scope.tenantId, scope.sessionId, run.ordinal, stepIndex);
  if (kept === null) return null;
  return { ordinal: run.ordinal, lastSeq: await deps.store.branches.lastEventOfStep(scope.sessionId, run.id, kept) };
}

/** The copied cut run ends (cancelled, as its row says), then `session_forked` says where the session came from. */
async function announceFork(
  fx: Effects,
  scope: { tenantId: TenantId; sessionId: SessionId; from: SessionId },
  forked: { resolved: ResolvedPoint; checkpoint: CheckpointRow; copied: { runs: Forked["runs"] }; notUndone: NotUndoneCall[] },
): Promise<void> {
  const last = forked.copied.runs.at(-1);
  if (!last) return;
  const events: NewEvent[] = [];
  if (last.cancelled) {
    const error = { code: "forked", message: "the session was forked inside this run; the rest of it stays in the source session" };
    events.push({ runId: last.to, step: null, body: { type: "run_end", status: "cancelled", error } });
  }
  const body = {
    type: "session_forked" as const,
    fromSessionId: scope.from,
    at: forked.resolved.point,
    checkpointId: forked.checkpoint.id,
    notUndone: forked.notUndone.slice(0, notUndoneInEvents),
  };
  events.push({ runId: last.to, step: null, body });
  await fx.emit(scope.tenantId, scope.sessionId, events);
}
