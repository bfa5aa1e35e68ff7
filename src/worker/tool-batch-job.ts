import { DelayedError, type Job } from "bullmq";
import type { StepRef } from "../core/events.js";
import { replaceSessionTasks } from "../store/sessions.js";
import { storableText } from "../core/storable-text.js";
import type { ToolBatchJobData } from "../queue/job-types.js";
import { admitWaitingRuns, closeOpenCalls, endRun } from "../runs/run-lifecycle.js";
import { StaleWorkError, transact, transactFenced, withRetry, type Effects } from "../store/transact.js";
import {
  addActivatedTools,
  claimBatch,
  countInterruption,
  gateRules,
  lockHeldRun,
  moveToNextStep,
  parkRun,
  type CallRow,
  type ClaimedRun,
} from "../store/runs.js";
import { answerCall, appendCallProgress, insertFileChanges, markCallsRunning, openCallsOfBatch } from "../store/tool-calls.js";
import { runningCallsOf, takeCallSlots } from "../store/tool-call-slots.js";
import { effectiveQuotas } from "../tenants/tenant-settings.js";
import type { Services } from "../services.js";
import type { StoredToolResult, ToolContext } from "../tools/tool.js";
import { newId } from "../ids.js";
import { putBlob } from "../store/blobs.js";
import { readToolResult } from "../context/read-tool-result.js";
import { storeResultArtifacts } from "../artifacts/store-result-artifacts.js";
import { findCommand, requestCommandCancel } from "../store/commands.js";
import { applyGateWrites, judgeBatch, type CallGrant, type GateRules, type GateWrite } from "../approvals/gate-batch.js";
import { cancelPendingApprovals } from "../store/approvals.js";
import type { JobContext, JobOutcome } from "./job-context.js";
import { maxParallelCalls, planLanes, runWithLimit } from "./tool-lanes.js";
import { toolsOfRun } from "./run-tools.js";
import { batchToolEnvironment } from "./batch-tool-environment.js";
import { observeToolCall } from "./job-telemetry.js";
import { commitThroughOutage } from "./commit-through-outage.js";
import { settleProjectLayers, type ProjectLayers } from "./roll-forward-layers.js";
import { startSubAgent } from "../agents/start-sub-agent.js";
import type { ScopedTools } from "../mcp/tool-catalog.js";
import type { ApprovalMode } from "../core/session.js";
import type { NextJob } from "../core/next-job.js";

/**
 * Runs the tool calls of one model response. Each call is marked `running`
 * before its tool starts and gets its result in the same transaction as its
 * terminal status. A call found `running` when the batch is claimed was never
 * confirmed: it is marked `interrupted`, never run again, and so is the run (D3).
 *
 * To keep statements few, the first group's calls, when the step's commit
 * found them allowed (`preGrantFirstGroup`), are marked running by the claim
 * itself, and the call that commits last also hands the run to its next step
 * in the same statement.
 */
export async function processToolBatchJob(context: JobContext, job: Job<ToolBatchJobData>, token: string | undefined): Promise<JobOutcome> {
  const { services, leases, aborts } = context;
  const { runId, stepIndex } = job.data;
  const next: NextJob = { kind: "batch", stepIndex, ...(job.data.resume !== undefined ? { resume: job.data.resume } : {}) };
  const owner = `${context.workerId}/${job.id}`;
  const tools = await toolsOfRun(context, runId);
  const { pool } = services.db;

  // What an interrupted command of this project wrote is settled before any later call of it runs
  // (SPEC X7): a late layer never lands over newer work. A batch that must wait holds no worker slot.
  const layers = await settleLayersOfRun(context, runId);
  if (layers.kind === "wait") {
    await job.moveToDelayed(Date.now() + layers.retryInMs, token);
    throw new DelayedError();
  }

  // A tenant at its `toolCalls` quota starts no batch: the job waits outside the worker, so
  // one tenant's calls never hold worker slots other tenants' jobs could use (SPEC X5).
  const callQuota = await toolCallQuota(context, runId);
  if (callQuota.limit > 0 && (await runningCallsOf(pool, callQuota.tenantId)) >= callQuota.limit) {
    await job.moveToDelayed(Date.now() + callSlotRetryMs(), token);
    throw new DelayedError();
  }

  // The claim is one statement that also reads the calls and the rules they are judged by;
  // writes of the gate (rare) and the running marks follow as fenced statements of their own.
  const claim = await withRetry(() =>
    claimBatch(pool, { runId, stepIndex, next, owner, leaseMs: services.config.workers.leaseMs, startPreGranted: callQuota.limit === 0 }),
  );
  if (claim.kind === "busy") {
    await job.moveToDelayed(Date.now() + claim.retryInMs, token);
    throw new DelayedError();
  }
  if (claim.kind === "gone") return claim;
  const { run, extra } = claim;
  // A call waiting on its sub-agent is `running` but lost nothing with a worker: its child carries on (A1).
  // Calls this claim started itself were not running before it (it starts none after a crash).
  if (extra.calls.some((call) => call.status === "running" && call.childRunId === null && !extra.startedIds.has(call.id))) {
    const after = await transactFenced(services, (fx) => closeInterruptedBatch(fx, services, run, stepIndex));
    if (after === null) return { kind: "stale" };
    return after === "continued"
      ? { kind: "committed", detail: "carried on after an interrupted call" }
      : { kind: "gone", reason: "interrupted" };
  }
  const stepRef: StepRef = { index: stepIndex, attempt: extra.stepAttempt };
  const { session, project } = await context.sessionContexts.get(services.db.db, run.sessionId);
  const batch: BatchScope = {
    run,
    stepRef,
    approvalMode: session.approvalMode,
    projectId: project.id,
    workspaceDir: project.workspacePath,
    tools,
    callQuota: callQuota.limit,
  };
  const stepTools = extra.stepTools;

  leases.hold(owner);
  const controller = aborts.register(runId);
  try {
    const preStarted = extra.calls.filter((call) => extra.startedIds.has(call.id));
    if (preStarted.length > 0) await services.bus.publish(extra.startedEvents);
    const rest = extra.calls.filter((call) => !extra.startedIds.has(call.id));
    const claimedPlan = await planRunnable(services, batch, rest, extra, (writes) =>
      transactFenced(services, async (fx) => {
        if (!(await lockHeldRun(fx.tx, run))) throw new StaleWorkError();
        await applyGateWrites(fx, batch, writes);
        return true;
      }),
    );
    if (claimedPlan === null) return { kind: "stale" };
    let plan = claimedPlan;
    // The calls this attempt has marked running; any other call of a group takes its slot as it starts.
    const started = new Set(preStarted.map((call) => call.id));
    if (preStarted.length > 0) {
      // The claim started the first group (a whole lane of at most five calls); the rest follows it in model order.
      const grants = new Map(plan.grants);
      for (const call of preStarted)
        grants.set(call.id, { argumentsRaw: call.argumentsRaw, edited: false, network: call.preGrant?.network ?? false });
      plan = { ...plan, groups: [preStarted, ...plan.groups], grants };
    } else if (plan.groups[0]) {
      const marked = await markRunning(services, batch, startingWindow(plan.groups[0]), owner);
      if (marked === null) return { kind: "stale" };
      for (const call of marked) started.add(call.id);
    }
    const provider = services.providers.get(session.providerProfile);
    const environment = await batchToolEnvironment(services, {
      tenantId: run.tenantId,
      approvalMode: session.approvalMode,
      workspacePath: project.workspacePath,
    });
    const toolContext = (call: CallRow, grant: CallGrant): ToolContext => ({
      tenantId: run.tenantId,
      sessionId: run.sessionId,
      runId,
      projectId: project.id,
      workspace: environment.workspace,
      processes: environment.processesFor(grant, { tenantId: run.tenantId, sessionId: run.sessionId, runId, toolCallId: call.id }),
      approvalMode: session.approvalMode,
      provider: { profile: provider.profile, model: session.model ?? provider.defaultModel },
      exposedTools: stepTools,
      signal: controller.signal,
      deferredTools: {
        search: (query, limit) => tools.registry.searchDeferred(query, session, limit),
        async activate(names) {
          // Fenced like every write of this batch: a superseded attempt activates nothing.
          await addActivatedTools(pool, run, names);
        },
      },
      blobs: { put: (content) => putBlob(services.db.db, run.tenantId, content) },
      subagents: {
        start: (request) =>
          startSubAgent(services, { run, session, call, stepRef, isTool: (name) => tools.registry.get(name) !== undefined }, request),
      },
      history: { readToolResult: (reference) => readToolResult(services.db.db, run, reference) },
      tasks: {
        async replace(tasks) {
          await transact(services, async (fx) => {
            await replaceSessionTasks(fx.tx, run.sessionId, tasks);
            await fx.emit(run.tenantId, run.sessionId, [{ runId, step: stepRef, body: { type: "tasks_updated", tasks: [...tasks] } }]);
          });
        },
      },
      commands: {
        start: (command) =>
          context.commands.start({
            tenantId: run.tenantId,
            sessionId: run.sessionId,
            runId,
            command,
            processes: environment.processesFor(grant, { tenantId: run.tenantId, sessionId: run.sessionId, runId, toolCallId: call.id }),
          }),
        get: (id) => findCommand(services.db.db, run.tenantId, id, run.sessionId),
        async cancel(id) {
          const found = await findCommand(services.db.db, run.tenantId, id, run.sessionId);
          if (found) await requestCommandCancel(services.db.db, services.bus, found);
          return found && (await findCommand(services.db.db, run.tenantId, id, run.sessionId));
        },
      },
      reportProgress(message) {
        // Fenced like a result: progress lands only while this attempt still runs the call. The
        // promise settles once it is recorded or dropped, never rejects: a tool need not await it.
        return appendCallProgress(pool, run, call, stepRef, storableText(message))
          .then((events) => services.bus.publish(events))
          .catch((error: unknown) => services.logger.warn({ err: error, runId, callId: call.callId }, "tool progress was not recorded"));
      },
    });

    for (;;) {
      let endBatch = false;
      let stale = false;
      let finished = false;
      const { grants } = plan;
      for (const [groupIndex, group] of plan.groups.entries()) {
        if (endBatch || stale || controller.signal.aborted) break;
        // A call is marked running when its tool starts, never before (D3): the group's first
        // window of calls together, each later call as a slot frees up. A crash then reports
        // "may have partly run" only for calls that did start; the rest are "not run".
        if (groupIndex > 0) {
          const marked = await markRunning(services, batch, startingWindow(group), owner);
          if (marked === null) {
            stale = true;
            break;
          }
          for (const call of marked) started.add(call.id);
        }
        await runWithLimit(group, maxParallelCalls, async (call) => {
          if (stale) return;
          if (!started.has(call.id)) {
            const marked = await startWhenSlotFree(services, batch, call, owner, controller.signal);
            if (marked === "stale") stale = true;
            if (marked !== "started") return;
            started.add(call.id);
          }
          const grant = grants.get(call.id) ?? { argumentsRaw: call.argumentsRaw, edited: false, network: false };
          const executed = await observeToolCall(services, { tenantId: run.tenantId, callId: call.callId, name: call.name }, () =>
            tools.executor.execute(toolContext(call, grant), { callId: call.callId, name: call.name, argumentsRaw: grant.argumentsRaw }),
          );
          // A sub-agent's end delivers this call's result (A1); the batch settles around it.
          if (executed.awaitChildRun !== undefined && !executed.isError) return;
          // Bytes become artifact references before anything is stored or emitted (I1, I2).
          const result = withEditNote(
            grant,
            await storeResultArtifacts(services.db.db, { tenantId: run.tenantId, sessionId: run.sessionId }, executed),
          );
          const outcome = await commitCall(services, run, call, result, stepRef);
          if (outcome === "stale") stale = true;
          else if (outcome === "finished") finished = true;
          if (result.endBatch) endBatch = true;
        });
      }
      if (finished) return { kind: "committed", detail: "batch done" };
      if (controller.signal.aborted) return { kind: "cancelled" };
      if (stale) return { kind: "stale" };

      // Reached when the last commit could not close the batch: an end-of-batch signal, siblings
      // committing at once, calls awaiting approval, or calls approved while this job ran.
      const settled = await transactFenced(services, async (fx) => settleBatch(fx, services, batch, owner, endBatch));
      if (settled === null) return { kind: "stale" };
      if (settled.kind === "closed") return { kind: "committed", detail: "batch done" };
      if (settled.kind === "parked") return { kind: "committed", detail: "parked: waiting for approval or sub-agents" };
      plan = settled.plan;
      for (const id of settled.started) started.add(id);
    }
  } finally {
    aborts.unregister(runId, controller);
    leases.release(owner);
  }
}

/** What every transaction of one batch attempt needs to know about it. */
interface BatchScope {
  run: ClaimedRun;
  stepRef: StepRef;
  approvalMode: ApprovalMode;
  projectId: string;
  workspaceDir: string;
  tools: ScopedTools;
  /** The tenant's `toolCalls` quota (SPEC X5); 0: no limit. */
  callQuota: number;
}

interface RunnablePlan {
  /** Groups to run now, in model order (P2); the first is already marked running by the caller. */
  groups: CallRow[][];
  grants: Map<string, CallGrant>;
  /** Whether a call waits for a human; otherwise what is still open waits for sub-agents. */
  waitsForApproval: boolean;
}

/**
 * Gates the batch's queued calls, then plans what may run now: lanes in model
 * order, up to and including the first group that holds a call awaiting
 * approval. Later calls wait for it, so no call overtakes an earlier one the
 * model meant to happen first (P2, D6). What the gate writes goes through
 * `apply`; null when that found the batch taken over.
 */
async function planRunnable(
  services: Services,
  batch: BatchScope,
  calls: readonly CallRow[],
  rules: GateRules,
  apply: (writes: GateWrite[]) => Promise<unknown>,
): Promise<RunnablePlan | null> {
  const gateInput = {
    run: batch.run,
    approvalMode: batch.approvalMode,
    projectId: batch.projectId,
    workspaceDir: batch.workspaceDir,
    stepRef: batch.stepRef,
  };
  const { grants, asked, writes } = await judgeBatch(
    { config: services.config, executor: batch.tools.executor },
    { ...gateInput, calls: calls.filter((call) => call.status === "queued") },
    rules,
  );
  if (writes.length > 0 && (await apply(writes)) === null) return null;
  // The gate may have answered some calls; only those it granted, or that still wait (for a decision or a sub-agent), stay open.
  const waitsForApproval = (call: CallRow) => asked.has(call.id) || call.status === "awaiting_approval";
  const open = calls.filter(
    (call) => grants.has(call.id) || waitsForApproval(call) || (call.status === "running" && call.childRunId !== null),
  );
  const lanes = planLanes(open, (call) => {
    const grant = grants.get(call.id);
    return (
      grant !== undefined && batch.tools.executor.isParallel({ callId: call.callId, name: call.name, argumentsRaw: grant.argumentsRaw })
    );
  });
  const groups: CallRow[][] = [];
  for (const lane of lanes) {
    const ready = lane.filter((call) => grants.has(call.id));
    if (ready.length > 0) groups.push(ready);
    if (ready.length !== lane.length) break;
  }
  return { groups, grants, waitsForApproval: open.some(waitsForApproval) };
}
type Settled = { kind: "closed" } | { kind: "parked" } | { kind: "more"; plan: RunnablePlan; started: ReadonlySet<string> };

/**
 * After this attempt's groups: skips what an end-of-batch signal left (P6),
 * runs calls approved meanwhile, closes the batch when nothing is open, and
 * otherwise parks the run in `awaiting_approval` with no job (D6): the next
 * decision re-arms it. Under the run's lock, so a decision committing at the
 * same moment is seen either here or by its own transaction, never by neither.
 */
async function settleBatch(fx: Effects, services: Services, batch: BatchScope, owner: string, endBatch: boolean): Promise<Settled> {
  const { run, stepRef } = batch;
  if (!(await lockHeldRun(fx.tx, run))) throw new StaleWorkError();
  if (endBatch) await skipRemaining(fx, run, stepRef);
  const open = await openCallsOfBatch(fx.tx, run.id, stepRef.index);
  if (open.some((call) => call.status === "running" && call.childRunId === null))
    throw new StaleWorkError("calls of this batch are still running");
  const queued = open.filter((call) => call.status === "queued").map((call) => call.id);
  const rules = await gateRules(fx.pg, batch.projectId, queued);
  const plan = await planRunnable(services, batch, open, rules, (writes) => applyGateWrites(fx, batch, writes));
  if (!plan) throw new StaleWorkError();
  if (plan.groups[0]) {
    const marked = await markWithinQuota(fx, batch, startingWindow(plan.groups[0]), owner);
    return { kind: "more", plan, started: new Set(marked.map((call) => call.id)) };
  }
  if (await closeBatchIfDone(fx, services, run, stepRef.index)) return { kind: "closed" };
  // Waiting for a human shows as `awaiting_approval`; waiting only for sub-agents, the run is still `running` (they work for it).
  const status = plan.waitsForApproval ? "awaiting_approval" : "running";
  if (!(await parkRun(fx.tx, run, status))) throw new StaleWorkError();
  if (status === "awaiting_approval") {
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: stepRef, body: { type: "run_status", status } }]);
    // A run waiting for a person holds no worker: its slot goes to the tenant's next waiting run (SPEC X5).
    await admitWaitingRuns(fx, run.tenantId);
  }
  return { kind: "parked" };
}

/** The model is told when a human changed what it asked for (X3), so its next step reasons about what really ran. */
function withEditNote(grant: CallGrant, result: StoredToolResult): StoredToolResult {
  if (!grant.edited) return result;
  const note = `Note: a reviewer edited the arguments before approving; the call ran with ${grant.argumentsRaw}`;
  return { ...result, content: [{ type: "text", text: note }, ...result.content] };
}

/** The calls of a group that start at once: at most `maxParallelCalls` (P3). */
function startingWindow(group: readonly CallRow[]): CallRow[] {
  return group.slice(0, maxParallelCalls);
}

/**
 * Marks calls `running` before their tools start, under the batch's fence, and announces it:
 * all of them, or under a `toolCalls` quota as many as the tenant has slots for (the first
 * ones, in model order). Null when the batch was taken over.
 */
async function markRunning(
  services: Services,
  batch: BatchScope,
  calls: readonly CallRow[],
  owner: string,
): Promise<readonly CallRow[] | null> {
  const { run, stepRef } = batch;
  if (batch.callQuota === 0) {
    const events = await withRetry(() => markCallsRunning(services.db.pool, run, calls, owner, stepRef));
    if (!events) return null;
    await services.bus.publish(events);
    return calls;
  }
  return transactFenced(services, (fx) => markWithinQuota(fx, batch, calls, owner));
}

/** Inside a transaction: marks as many of `calls` as the tenant's quota lets start now. Stale when the batch was taken over. */
async function markWithinQuota(fx: Effects, batch: BatchScope, calls: readonly CallRow[], owner: string): Promise<readonly CallRow[]> {
  const { run, stepRef } = batch;
  const free = batch.callQuota === 0 ? calls.length : await takeCallSlots(fx.pg, run.tenantId, batch.callQuota, calls.length);
  if (free === 0) return [];
  const chosen = calls.slice(0, free);
  const events = await markCallsRunning(fx.pg, run, chosen, owner, stepRef);
  if (!events) throw new StaleWorkError();
  fx.track(events);
  return chosen;
}

/**
 * Marks one call `running` once the tenant has a free slot, waiting (still `queued`) while its
 * other calls hold them all. Only a batch whose earlier calls started waits here: a batch whose
 * tenant was at its quota never started (`processToolBatchJob` delays it), so the waiting
 * batches of a tenant are at most its quota.
 */
async function startWhenSlotFree(
  services: Services,
  batch: BatchScope,
  call: CallRow,
  owner: string,
  signal: AbortSignal,
): Promise<"started" | "stale" | "cancelled"> {
  for (;;) {
    const marked = await markRunning(services, batch, [call], owner);
    if (marked === null) return "stale";
    if (marked.length > 0) return "started";
    if (!(await sleepUnlessAborted(callSlotRetryMs(), signal))) return "cancelled";
  }
}

/** A busy tenant's jobs and calls look again after about a fifth of a second, spread so they do not all look at once. */
function callSlotRetryMs(): number {
  return 150 + Math.floor(Math.random() * 100);
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Settles the interrupted commands' layers of a run's project on this host (see `settleProjectLayers`). */
async function settleLayersOfRun(context: JobContext, runId: string): Promise<ProjectLayers> {
  const { services } = context;
  if (!services.callLayers.ok) return { kind: "clear" };
  const scope = await context.sessionContexts.scopeOfRun(services.db.db, runId);
  if (!scope) return { kind: "clear" };
  const { project } = await context.sessionContexts.get(services.db.db, scope.sessionId);
  return settleProjectLayers(services, project.workspacePath);
}

/** The tenant's `toolCalls` quota for a run's batches; 0 (no limit) for a run that is gone (its claim then finds it gone). */
async function toolCallQuota(context: JobContext, runId: string): Promise<{ tenantId: string; limit: number }> {
  const { services } = context;
  const scope = await context.sessionContexts.scopeOfRun(services.db.db, runId);
  if (!scope) return { tenantId: "", limit: 0 };
  const settings = await services.tenantSettings.get(scope.tenantId);
  return { tenantId: scope.tenantId, limit: effectiveQuotas(services.config, settings).toolCalls };
}

/**
 * Stores one call's result (SPEC L2, T3) with `answerCall`, only if this attempt
 * still owns the call (fence). If no other call of the batch is open and the run
 * may take another step, the same statement hands the run to that step;
 * otherwise the end transaction of the job closes the batch.
 */
async function commitCall(
  services: Services,
  run: ClaimedRun,
  call: CallRow,
  result: StoredToolResult,
  stepRef: StepRef,
): Promise<"committed" | "finished" | "stale"> {
  const fileChanges = (result.fileChanges ?? []).map((change) => ({ ...change, id: newId("fch") }));
  const outcome = {
    status: result.isError ? "failed" : "succeeded",
    isError: result.isError === true,
    errorCode: result.errorCode ?? null,
    content: result.content,
    ...(result.displayDiff ? { diff: result.displayDiff } : {}),
    fileChanges,
  } as const;
  const next = { kind: "step", stepIndex: call.stepIndex + 1 } as const;
  const mayHandOff = next.stepIndex < services.config.runs.maxStepsPerRun;
  // The tool has run: its result waits out a Postgres outage rather than being lost to one.
  const answered = await commitThroughOutage(
    () =>
      withRetry(() =>
        answerCall(services.db.pool, {
          run,
          call,
          outcome,
          step: stepRef,
          execFence: run.fence,
          ...(mayHandOff ? { handOff: { fence: run.fence, current: run.nextJob, next } } : {}),
        }),
      ),
    {
      leaseMs: services.config.workers.leaseMs,
      onWait: (error, retryInMs) =>
        services.logger.warn(
          { err: error, runId: run.id, callId: call.callId, retryInMs },
          "Postgres unreachable: the call's result waits to be stored",
        ),
    },
  );
  if (!answered.answered) {
    // Another attempt closed the call meanwhile (taken for dead, or cancelled): its changes are in the
    // workspace all the same, so their records are kept, under the call (SPEC X7, F3).
    if (fileChanges.length > 0) await keepRecordsOfClosedCall(services, run, call, result.fileChanges ?? []);
    return "stale";
  }
  const published = services.bus.publish(answered.events);
  if (!answered.handedOff) {
    await published;
    return "committed";
  }
  await Promise.all([published, services.dispatcher.dispatch([{ runId: run.id, tenantId: run.tenantId, next, redispatches: 0 }])]);
  return "finished";
}

async function keepRecordsOfClosedCall(
  services: Services,
  run: ClaimedRun,
  call: CallRow,
  records: NonNullable<StoredToolResult["fileChanges"]>,
): Promise<void> {
  await insertFileChanges(
    services.db.db,
    { tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id, toolCallId: call.id },
    records,
  ).catch((error: unknown) =>
    services.logger.error(
      { err: error, runId: run.id, callId: call.callId },
      "the file changes of a call closed by another attempt were not recorded",
    ),
  );
}

/**
 * When no call of the batch is open any more, hands the run to its next step
 * (or fails it at the step limit). Guarded by fence and `next_job`, so only one
 * transaction can do it. Answers whether the batch is closed.
 */
async function closeBatchIfDone(fx: Effects, services: Pick<Services, "config">, run: ClaimedRun, stepIndex: number): Promise<boolean> {
  if ((await openCallsOfBatch(fx.tx, run.id, stepIndex)).length > 0) return false;
  const nextIndex = stepIndex + 1;
  const { maxStepsPerRun } = services.config.runs;
  if (nextIndex >= maxStepsPerRun) {
    if (
      !(await endRun(fx, run, "failed", {
        fence: run.fence,
        error: { code: "max_steps_exceeded", message: `the run reached the limit of ${maxStepsPerRun} steps` },
      }))
    ) {
      throw new StaleWorkError();
    }
    return true;
  }
  const next = await moveToNextStep(fx.tx, run, nextIndex);
  if (!next) throw new StaleWorkError();
  fx.dispatch({ runId: run.id, tenantId: run.tenantId, next, redispatches: 0 });
  return true;
}

/**
 * A call of this batch was running when its worker stopped: it is marked `interrupted`
 * and never run again (D3), the calls that had not started are closed as not run, and
 * the run either ends `interrupted` or, with `onInterrupted: "continue"` and fewer than
 * the allowed interruptions so far, goes on with its next step, whose model sees the
 * honest tool messages and decides (D10).
 */
async function closeInterruptedBatch(fx: Effects, services: Services, run: ClaimedRun, stepIndex: number): Promise<"continued" | "ended"> {
  if (!(await lockHeldRun(fx.tx, run))) throw new StaleWorkError();
  const { maxContinuedInterruptions } = services.config.runs;
  const count = run.onInterrupted === "continue" ? await countInterruption(fx.pg, run, maxContinuedInterruptions) : undefined;
  await closeOpenCalls(fx, run, "interrupted", { carryingOn: count !== undefined });
  if (count !== undefined) {
    if (!(await closeBatchIfDone(fx, services, run, stepIndex))) throw new StaleWorkError("calls of the interrupted batch are still open");
    const reason = `carrying on after an interrupted call (${count} of ${maxContinuedInterruptions} allowed)`;
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: null, body: { type: "run_status", status: "running", reason } }]);
    return "continued";
  }
  const limitNote =
    run.onInterrupted === "continue" ? ` (the run had already carried on after ${maxContinuedInterruptions} interruptions)` : "";
  await endRun(fx, run, "interrupted", {
    fence: run.fence,
    error: { code: "worker_lost", message: `a tool call was running when its worker stopped; it will not be run again${limitNote}` },
  });
  return "ended";
}

/** After an end-of-batch signal, the remaining calls get `skipped` results so every call id has one (P6). */
async function skipRemaining(fx: Effects, run: ClaimedRun, stepRef: StepRef): Promise<void> {
  const content = [{ type: "text" as const, text: "Skipped: an earlier call in this batch ended the batch." }];
  const remaining = await openCallsOfBatch(fx.tx, run.id, stepRef.index, ["queued", "awaiting_approval"]);
  await cancelPendingApprovals(
    fx,
    run,
    remaining.filter((call) => call.status === "awaiting_approval").map((call) => call.id),
    "an earlier call in this batch ended the batch",
  );
  for (const call of remaining) {
    const answered = await answerCall(fx.pg, {
      run,
      call,
      outcome: { status: "skipped", isError: true, errorCode: "skipped", content },
      step: stepRef,
    });
    fx.track(answered.events);
  }
}
