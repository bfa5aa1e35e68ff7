import type { NextJob } from "../../core/next-job.js";
import type { ScopedTools } from "../../mcp/tool-catalog.js";
import type { ToolBatchJobData } from "../../queue/job-types.js";
import type { BatchClaim, ClaimedRun } from "../../store/runs.js";
import { withRetry } from "../../store/transact.js";
import { effectiveQuotas } from "../../tenants/tenant-settings.js";
import type { JobDeps } from "../job-deps.js";
import { settleProjectLayers, type ProjectLayers } from "../roll-forward-layers.js";
import type { SessionContextCache } from "../session-context-cache.js";
import type { BatchScope } from "./batch-attempt.js";
import { callSlotRetryMs } from "./start-calls.js";
import type { RunId, TenantId } from "../../ids.js";
import { hostWorkspacePath } from "../../workspace/host-copies.js";

/** What the claim uses. */
export interface BatchClaimContext {
  deps: Pick<JobDeps, "store" | "config" | "callLayers" | "logger" | "tenantSettings">;
  sessionContexts: SessionContextCache;
  /** The worker's host: the batch claims its run only where the project is placed (SPEC W3). */
  hostId: string;
}

export interface ClaimedBatch {
  kind: "claimed";
  run: ClaimedRun;
  stepIndex: number;
  extra: BatchClaim;
  /** The tenant's `toolCalls` quota (SPEC X5); 0: no limit. */
  callQuota: number;
  /** The placement the claim was fenced by: this host, at this epoch. */
  placement: { hostId: string; epoch: number };
}

/** `busy`: another lease holds the run, an interrupted command's changes are being settled, or the tenant is at its call quota. */
export type BatchJobClaim = ClaimedBatch | { kind: "busy"; retryInMs: number } | { kind: "gone"; reason: string };

/**
 * Phase 1 of the tool-batch job (process.ts), the claim: one statement claims the run and reads the
 * step's calls and the rules they are judged by. Before it, what an interrupted command of
 * this project wrote is settled (SPEC X7: a late layer never lands over newer work), and a
 * tenant at its `toolCalls` quota starts no batch (X5); either way the job waits outside the
 * worker, holding no slot other tenants' jobs could use.
 */
export async function claimToolBatch(context: BatchClaimContext, data: ToolBatchJobData, owner: string): Promise<BatchJobClaim> {
  const { deps } = context;
  const { runId, stepIndex } = data;
  const placement = data.placement ?? (await deps.store.placements.placeProject({ runId }, deps.config.workers.livenessTimeoutMs));
  // A job enqueued by hand, or routed before a move: the sweeper enqueues the run's batch where its project is.
  if (!placement || placement.hostId !== context.hostId) return { kind: "gone", reason: "the project is placed on another host" };
  const layers = await settleLayersOfRun(context, runId);
  if (layers.kind === "wait") return { kind: "busy", retryInMs: layers.retryInMs };
  const callQuota = await toolCallQuota(context, runId);
  if (
    callQuota.tenantId !== null &&
    callQuota.limit > 0 &&
    (await deps.store.toolCallSlots.runningCallsOf(callQuota.tenantId)) >= callQuota.limit
  )
    return { kind: "busy", retryInMs: callSlotRetryMs() };
  // One statement also reads the calls and the rules; the gate's writes (rare) and the running marks follow, fenced.
  const next: NextJob = { kind: "batch", stepIndex, ...(data.resume !== undefined ? { resume: data.resume } : {}) };
  const leaseMs = deps.config.workers.leaseMs;
  const claim = await withRetry(() =>
    deps.store.runs.claimBatch({ runId, stepIndex, next, owner, leaseMs, startPreGranted: callQuota.limit === 0, placement }),
  );
  const { hostId, epoch } = placement;
  return claim.kind === "claimed" ? { ...claim, stepIndex, callQuota: callQuota.limit, placement: { hostId, epoch } } : claim;
}

/** Settles the interrupted commands' layers of a run's project on this host (see `settleProjectLayers`). */
async function settleLayersOfRun(context: BatchClaimContext, runId: RunId): Promise<ProjectLayers> {
  const { deps } = context;
  if (!deps.callLayers.ok) return { kind: "clear" };
  const scope = await context.sessionContexts.scopeOfRun(runId);
  if (!scope) return { kind: "clear" };
  return settleProjectLayers(deps, hostWorkspacePath(deps.config.workspaces.dir, scope));
}

/** The tenant's `toolCalls` quota for a run's batches; 0 (no limit) for a run that is gone (its claim then finds it gone). */
async function toolCallQuota(context: BatchClaimContext, runId: RunId): Promise<{ tenantId: TenantId | null; limit: number }> {
  const { deps } = context;
  const scope = await context.sessionContexts.scopeOfRun(runId);
  if (!scope) return { tenantId: null, limit: 0 };
  const settings = await deps.tenantSettings.get(scope.tenantId);
  return { tenantId: scope.tenantId, limit: effectiveQuotas(deps.config, settings).toolCalls };
}

/** The claimed batch's scope; session and project rows come from the worker's cache. */
export async function scopeOfBatch(
  context: { sessionContexts: SessionContextCache; deps: Pick<JobDeps, "config"> },
  claim: ClaimedBatch,
  tools: ScopedTools,
): Promise<BatchScope> {
  const { run, extra } = claim;
  const { session, project } = await context.sessionContexts.get(run.sessionId);
  const workspaceDir = hostWorkspacePath(context.deps.config.workspaces.dir, { tenantId: run.tenantId, projectId: project.id });
  return {
    run,
    stepRef: { index: claim.stepIndex, attempt: extra.stepAttempt },
    session,
    approvalMode: session.approvalMode,
    projectId: project.id,
    workspaceDir,
    tools,
    stepTools: extra.stepTools,
    callQuota: claim.callQuota,
    checkpoint: extra.calls.some((call) => changesWorkspace(tools, call.name)),
    workspaceResetTo: extra.workspaceResetTo,
    placement: claim.placement,
  };
}

/**
 * Tools that write, run commands, or say nothing of what they do (an MCP tool without annotations
 * may write in the workspace its server runs in). A read or network tool changes no file; an
 * unknown tool runs nothing (its call fails as unknown).
 */
function changesWorkspace(tools: ScopedTools, name: string): boolean {
  const sideEffect = tools.registry.get(name)?.sideEffect;
  return sideEffect === "write" || sideEffect === "exec" || sideEffect === "other";
}
