import { DelayedError, type Job } from "bullmq";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { StepRef } from "../core/events.js";
import { runs, sessions, steps, toolCalls, type ApprovalMode } from "../db/schema.js";
import { appendedEventsJson, appendEventsCte, eventPayload, toSessionEvents } from "../events/event-store.js";
import { storableText } from "../core/storable-text.js";
import type { NextJob, ToolBatchJobData } from "../queue/job-types.js";
import { answerCall, toolEndEvent, toolMessageOf } from "../runs/answer-call.js";
import { resultPreview } from "../runs/result-preview.js";
import { closeOpenCalls, endRun, type RunRow } from "../runs/run-lifecycle.js";
import { StaleWorkError, transact, transactFenced, withRetry, type Effects } from "../runs/transact.js";
import type { Services } from "../services.js";
import type { StoredToolResult, ToolContext } from "../tools/tool.js";
import { newId } from "../ids.js";
import { putBlob } from "../files/blob-store.js";
import { readToolResult } from "../context/read-tool-result.js";
import { storeResultArtifacts } from "../artifacts/store-result-artifacts.js";
import { findCommand, requestCommandCancel } from "../commands/command-store.js";
import { gateBatch, type CallGrant } from "../approvals/gate-batch.js";
import { cancelPendingApprovals } from "../approvals/cancel-approvals.js";
import { claimRun } from "./claim-run.js";
import type { JobContext, JobOutcome } from "./job-context.js";
import { planLanes, runWithLimit } from "./tool-lanes.js";
import { toolsOfRun } from "./run-tools.js";
import { batchToolEnvironment } from "./batch-tool-environment.js";
import { startSubAgent } from "../agents/start-sub-agent.js";
import type { ScopedTools } from "../tools/tool-catalog.js";

type CallRow = typeof toolCalls.$inferSelect;
type ClaimedRun = RunRow & { ordinal: number };

/** At most this many calls of one batch run at once (SPEC P3). */
const maxParallelCalls = 5;
const openStatuses = ["queued", "running", "awaiting_approval"] as const;

/**
 * Runs the tool calls of one model response. Each call is marked `running`
 * before its tool starts and gets its result in the same transaction as its
 * terminal status. A call found `running` when the batch is claimed was never
 * confirmed: it is marked `interrupted`, never run again, and so is the run (D3).
 *
 * To keep transactions few, the first lane's calls are marked running in the
 * claim's transaction, and the call that commits last also hands the run to
 * its next step in the same transaction.
 */
export async function processToolBatchJob(context: JobContext, job: Job<ToolBatchJobData>, token: string | undefined): Promise<JobOutcome> {
  const { services, leases, aborts } = context;
  const { runId, stepIndex } = job.data;
  const next: NextJob = { kind: "batch", stepIndex, ...(job.data.resume !== undefined ? { resume: job.data.resume } : {}) };
  const owner = `${context.workerId}/${job.id}`;
  const tools = await toolsOfRun(context, runId);

  const claimed = await transact(services, async (fx) => {
    const claim = await claimRun(fx.tx, runId, next, owner, services.config.leaseMs);
    if (claim.kind !== "claimed") return claim;
    const { run } = claim;
    const rows = await fx.tx
      .select({ call: toolCalls, tools: steps.tools, attempt: steps.attempt })
      .from(steps)
      .innerJoin(toolCalls, eq(toolCalls.stepId, steps.id))
      .where(and(eq(steps.runId, runId), eq(steps.index, stepIndex)))
      .orderBy(asc(toolCalls.callIndex));
    const calls = rows.map((row) => row.call);
    // A call waiting on its sub-agent is `running` but lost nothing with a worker: its child carries on (A1).
    if (calls.some((call) => call.status === "running" && call.childRunId === null)) {
      await closeOpenCalls(fx, run, "interrupted");
      await endRun(fx, run, "interrupted", {
        fence: run.fence,
        error: { code: "worker_lost", message: "a tool call was running when its worker stopped; it will not be run again" },
      });
      return { kind: "gone" as const, reason: "interrupted" };
    }
    const stepRef: StepRef = { index: stepIndex, attempt: rows[0]?.attempt ?? 1 };
    const { session, project } = await context.sessionContexts.get(fx.tx, run.sessionId);
    const batch: BatchScope = { run, stepRef, approvalMode: session.approvalMode, projectId: project.id, workspaceDir: project.workspacePath, tools };
    const plan = await planRunnable(fx, services, batch, calls);
    if (plan.groups[0]) await markRunning(fx, run, startingWindow(plan.groups[0]), owner, stepRef);
    return { kind: "claimed" as const, run, batch, plan, session, project, stepTools: rows[0]?.tools ?? [], stepRef };
  });

  if (claimed.kind === "busy") {
    await job.moveToDelayed(Date.now() + claimed.retryInMs, token);
    throw new DelayedError();
  }
  if (claimed.kind === "gone") return claimed;

  const { run, batch, session, project, stepTools, stepRef } = claimed;
  let { plan } = claimed;
  leases.hold(owner);
  const controller = aborts.register(runId);
  try {
    const provider = services.providers.get(session.providerProfile);
    const environment = await batchToolEnvironment(services, { tenantId: run.tenantId, approvalMode: session.approvalMode, workspacePath: project.workspacePath });
    const toolContext = (call: CallRow, grant: CallGrant): ToolContext => ({
      tenantId: run.tenantId,
      sessionId: run.sessionId,
      runId,
      projectId: project.id,
      workspace: environment.workspace,
      processes: environment.processesFor(grant),
      approvalMode: session.approvalMode,
      provider: { profile: provider.profile, model: session.model ?? provider.defaultModel },
      exposedTools: stepTools,
      signal: controller.signal,
      deferredTools: {
        search: (query, limit) => tools.registry.searchDeferred(query, session, limit),
        async activate(names) {
          // Fenced like every write of this batch: a superseded attempt activates nothing.
          await services.db.db.execute(sql`
            update runs set activated_tools = (
              select coalesce(jsonb_agg(distinct name order by name), '[]'::jsonb)
              from jsonb_array_elements_text(activated_tools || ${JSON.stringify(names)}::jsonb) as name
            )
            where id = ${runId} and fence = ${run.fence} and status = 'running'
          `);
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
            await fx.tx.update(sessions).set({ tasks: [...tasks] }).where(eq(sessions.id, run.sessionId));
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
            processes: environment.processesFor(grant),
          }),
        get: (id) => findCommand(services.db.db, run.tenantId, id, run.sessionId),
        async cancel(id) {
          const found = await findCommand(services.db.db, run.tenantId, id, run.sessionId);
          if (found) await requestCommandCancel(services.db.db, services.bus, found);
          return found && (await findCommand(services.db.db, run.tenantId, id, run.sessionId));
        },
      },
      reportProgress(message) {
        // Fenced like a result: progress lands only while this attempt still runs the call.
        const owned = sql`exists (select 1 from tool_calls where id = ${call.id} and status = 'running' and exec_fence = ${run.fence})`;
        const payload = eventPayload([{ runId, step: stepRef, body: { type: "tool_update", callId: call.callId, progress: storableText(message) } }]);
        void services.db.db
          .execute<{ events: Parameters<typeof toSessionEvents>[1] }>(sql`
            with ${appendEventsCte(run.sessionId, run.tenantId, sql`${payload}`, owned)}
            select ${appendedEventsJson} as events
          `)
          .then((result) => services.bus.publish(toSessionEvents(run.sessionId, result.rows[0]?.events ?? [])))
          .catch(() => {});
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
        const window = startingWindow(group);
        if (groupIndex > 0) {
          const marked = await transactFenced(services, async (fx) => markRunning(fx, run, window, owner, stepRef));
          if (marked === null) {
            stale = true;
            break;
          }
        }
        const markedNow = new Set(window.map((call) => call.id));
        await runWithLimit(group, maxParallelCalls, async (call) => {
          if (stale) return;
          if (!markedNow.has(call.id)) {
            const marked = await transactFenced(services, async (fx) => markRunning(fx, run, [call], owner, stepRef));
            if (marked === null) {
              stale = true;
              return;
            }
          }
          const grant = grants.get(call.id) ?? { argumentsRaw: call.argumentsRaw, edited: false, network: false };
          const executed = await tools.executor.execute(toolContext(call, grant), { callId: call.callId, name: call.name, argumentsRaw: grant.argumentsRaw });
          // A sub-agent's end delivers this call's result (A1); the batch settles around it.
          if (executed.awaitChildRun !== undefined && !executed.isError) return;
          // Bytes become artifact references before anything is stored or emitted (I1, I2).
          const result = withEditNote(grant, await storeResultArtifacts(services.db.db, { tenantId: run.tenantId, sessionId: run.sessionId }, executed));
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
 * model meant to happen first (P2, D6).
 */
async function planRunnable(fx: Effects, services: Services, batch: BatchScope, calls: readonly CallRow[]): Promise<RunnablePlan> {
  const { grants, asked } = await gateBatch(fx, { config: services.config, executor: batch.tools.executor }, {
    run: batch.run,
    approvalMode: batch.approvalMode,
    projectId: batch.projectId,
    workspaceDir: batch.workspaceDir,
    calls: calls.filter((call) => call.status === "queued"),
    stepRef: batch.stepRef,
  });
  // The gate may have answered some calls; only those it granted, or that still wait (for a decision or a sub-agent), stay open.
  const waitsForApproval = (call: CallRow) => asked.has(call.id) || call.status === "awaiting_approval";
  const open = calls.filter((call) => grants.has(call.id) || waitsForApproval(call) || (call.status === "running" && call.childRunId !== null));
  const lanes = planLanes(open, (call) => {
    const grant = grants.get(call.id);
    return grant !== undefined && batch.tools.executor.isParallel({ callId: call.callId, name: call.name, argumentsRaw: grant.argumentsRaw });
  });
  const groups: CallRow[][] = [];
  for (const lane of lanes) {
    const ready = lane.filter((call) => grants.has(call.id));
    if (ready.length > 0) groups.push(ready);
    if (ready.length !== lane.length) break;
  }
  return { groups, grants, waitsForApproval: open.some(waitsForApproval) };
}
type Settled = { kind: "closed" } | { kind: "parked" } | { kind: "more"; plan: RunnablePlan };

/**
 * After this attempt's groups: skips what an end-of-batch signal left (P6),
 * runs calls approved meanwhile, closes the batch when nothing is open, and
 * otherwise parks the run in `awaiting_approval` with no job (D6): the next
 * decision re-arms it. Under the run's lock, so a decision committing at the
 * same moment is seen either here or by its own transaction, never by neither.
 */
async function settleBatch(fx: Effects, services: Services, batch: BatchScope, owner: string, endBatch: boolean): Promise<Settled> {
  const { run, stepRef } = batch;
  const [locked] = await fx.tx
    .select({ id: runs.id })
    .from(runs)
    .where(and(eq(runs.id, run.id), eq(runs.fence, run.fence), eq(runs.status, "running")))
    .for("update");
  if (!locked) throw new StaleWorkError();
  if (endBatch) await skipRemaining(fx, run, stepRef);
  const open = await fx.tx
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, run.id), eq(toolCalls.stepIndex, stepRef.index), inArray(toolCalls.status, [...openStatuses])))
    .orderBy(asc(toolCalls.callIndex));
  if (open.some((call) => call.status === "running" && call.childRunId === null)) throw new StaleWorkError("calls of this batch are still running");
  const plan = await planRunnable(fx, services, batch, open);
  if (plan.groups[0]) {
    await markRunning(fx, run, startingWindow(plan.groups[0]), owner, stepRef);
    return { kind: "more", plan };
  }
  if (await closeBatchIfDone(fx, services, run, stepRef.index)) return { kind: "closed" };
  // Waiting for a human shows as `awaiting_approval`; waiting only for sub-agents, the run is still `running` (they work for it).
  const status = plan.waitsForApproval ? "awaiting_approval" : "running";
  const [parked] = await fx.tx
    .update(runs)
    .set({ status, nextJob: null, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(and(eq(runs.id, run.id), eq(runs.fence, run.fence), eq(runs.status, "running")))
    .returning({ id: runs.id });
  if (!parked) throw new StaleWorkError();
  if (status === "awaiting_approval") {
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: stepRef, body: { type: "run_status", status } }]);
  }
  return { kind: "parked" };
}

/** The model is told when a human changed what it asked for (X3), so its next step reasons about what really ran. */
function withEditNote(grant: CallGrant, result: StoredToolResult): StoredToolResult {
  if (!grant.edited) return result;
  const note = `Note: a reviewer edited the arguments before approving; the call ran with ${grant.argumentsRaw}`;
  return { ...result, content: [{ type: "text", text: note }, ...result.content] };
}

/** Marks calls `running` before their tools start, guarded by the batch's fence. */
/** The calls of a group that start at once: at most `maxParallelCalls` (P3). */
function startingWindow(group: readonly CallRow[]): CallRow[] {
  return group.slice(0, maxParallelCalls);
}

async function markRunning(fx: Effects, run: ClaimedRun, calls: readonly CallRow[], owner: string, stepRef: StepRef): Promise<void> {
  const marked = await fx.tx
    .update(toolCalls)
    .set({ status: "running", execFence: run.fence, executedBy: owner, startedAt: sql`now()` })
    .where(
      and(
        inArray(
          toolCalls.id,
          calls.map((call) => call.id),
        ),
        eq(toolCalls.status, "queued"),
        sql`exists (select 1 from ${runs} where ${runs.id} = ${run.id} and ${runs.fence} = ${run.fence} and ${runs.status} = 'running')`,
      ),
    )
    .returning({ id: toolCalls.id });
  if (marked.length !== calls.length) throw new StaleWorkError();
  await fx.emit(
    run.tenantId,
    run.sessionId,
    calls.map((call) => ({ runId: run.id, step: stepRef, body: { type: "tool_update" as const, callId: call.callId, status: "running" as const } })),
  );
}

/**
 * Stores one call's result in one statement (SPEC L2, T3): its terminal status,
 * its tool message, its file-change records and its `tool_end` event, all only if this attempt still owns
 * the call (fence). If no other call of the batch is open and the run may take
 * another step, the same statement hands the run to that step; otherwise the
 * end transaction of the job closes the batch.
 */
async function commitCall(
  services: Services,
  run: ClaimedRun,
  call: CallRow,
  result: StoredToolResult,
  stepRef: StepRef,
): Promise<"committed" | "finished" | "stale"> {
  const status = result.isError ? "failed" : "succeeded";
  const isError = result.isError === true;
  const fileChanges = (result.fileChanges ?? []).map((change) => ({ ...change, id: newId("fch") }));
  const outcome = {
    status,
    isError,
    errorCode: result.errorCode ?? null,
    content: result.content,
    ...(result.displayDiff ? { diff: result.displayDiff } : {}),
    fileChanges,
  } as const;
  const nextIndex = call.stepIndex + 1;
  const next = { kind: "step", stepIndex: nextIndex } as const;
  const mayClose = nextIndex < services.config.maxStepsPerRun;
  const updated = sql`exists (select 1 from committed_call)`;
  const statement = sql`
    with committed_call as (
      update tool_calls
      set status = ${status}, result = ${JSON.stringify(resultPreview(result.content))}::jsonb, is_error = ${isError},
          error_code = ${result.errorCode ?? null}, ended_at = now()
      where id = ${call.id} and status = 'running' and exec_fence = ${run.fence}
      returning id
    ),
    tool_message as (
      insert into messages (id, tenant_id, session_id, run_id, run_ordinal, step_index, part, call_index, role, content)
      select ${newId("msg")}, ${run.tenantId}, ${run.sessionId}, ${run.id}, ${run.ordinal}, ${call.stepIndex}, 2, ${call.callIndex},
             'tool', ${JSON.stringify(toolMessageOf(call, outcome))}::jsonb
      from committed_call
      on conflict do nothing
    ),
    recorded_changes as (
      insert into file_changes (id, tenant_id, session_id, run_id, tool_call_id, path, existed_before, mode_before, mode_after, sha256_before, sha256_after, diff)
      select f.id, ${run.tenantId}, ${run.sessionId}, ${run.id}, ${call.id}, f.path, f."existedBefore", f."modeBefore", f."modeAfter", f."sha256Before", f."sha256After", f.diff
      from committed_call,
           jsonb_to_recordset(${JSON.stringify(fileChanges)}::jsonb)
             as f(id text, path text, "existedBefore" boolean, "modeBefore" int, "modeAfter" int, "sha256Before" text, "sha256After" text, diff text)
    ),
    closed_batch as (
      update runs
      set step_index = ${nextIndex}, next_job = ${JSON.stringify(next)}::jsonb, redispatches = 0,
          lease_owner = null, lease_until = null, updated_at = now()
      where id = ${run.id} and fence = ${run.fence} and status = 'running'
        and next_job = ${JSON.stringify(run.nextJob)}::jsonb
        and ${mayClose} and ${updated}
        and not exists (
          select 1 from tool_calls
          where run_id = ${run.id} and step_index = ${call.stepIndex} and id <> ${call.id}
            and status in ('queued', 'running', 'awaiting_approval')
        )
      returning id
    ),
    ${appendEventsCte(run.sessionId, run.tenantId, sql`${eventPayload([{ runId: run.id, step: stepRef, body: toolEndEvent(call, outcome) }])}`, updated)}
    select (select count(*) from committed_call)::int as committed,
           (select count(*) from closed_batch)::int as closed,
           ${appendedEventsJson} as events
  `;
  const [row] = (
    await withRetry(() => services.db.db.execute<{ committed: number; closed: number; events: Parameters<typeof toSessionEvents>[1] }>(statement))
  ).rows;
  if (!row || row.committed === 0) return "stale";
  await services.bus.publish(toSessionEvents(run.sessionId, row.events));
  if (row.closed === 0) return "committed";
  await services.dispatcher.dispatch([{ runId: run.id, next, redispatches: 0 }]);
  return "finished";
}

/**
 * When no call of the batch is open any more, hands the run to its next step
 * (or fails it at the step limit). Guarded by fence and `next_job`, so only one
 * transaction can do it. Answers whether the batch is closed.
 */
async function closeBatchIfDone(fx: Effects, services: Pick<Services, "config">, run: ClaimedRun, stepIndex: number): Promise<boolean> {
  const open = await fx.tx
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, run.id), eq(toolCalls.stepIndex, stepIndex), inArray(toolCalls.status, [...openStatuses])))
    .limit(1);
  if (open.length > 0) return false;
  const nextIndex = stepIndex + 1;
  const { maxStepsPerRun } = services.config;
  if (nextIndex >= maxStepsPerRun) {
    if (!(await endRun(fx, run, "failed", { fence: run.fence, error: { code: "max_steps_exceeded", message: `the run reached the limit of ${maxStepsPerRun} steps` } }))) {
      throw new StaleWorkError();
    }
    return true;
  }
  const next = { kind: "step", stepIndex: nextIndex } as const;
  const moved = await fx.tx
    .update(runs)
    .set({ stepIndex: nextIndex, nextJob: next, redispatches: 0, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
    .where(
      and(
        eq(runs.id, run.id),
        eq(runs.fence, run.fence),
        eq(runs.status, "running"),
        sql`${runs.nextJob} = ${JSON.stringify(run.nextJob)}::jsonb`,
      ),
    )
    .returning({ id: runs.id });
  if (moved.length === 0) throw new StaleWorkError();
  fx.dispatch({ runId: run.id, next, redispatches: 0 });
  return true;
}

/** After an end-of-batch signal, the remaining calls get `skipped` results so every call id has one (P6). */
async function skipRemaining(fx: Effects, run: ClaimedRun, stepRef: StepRef): Promise<void> {
  const content = [{ type: "text" as const, text: "Skipped: an earlier call in this batch ended the batch." }];
  const skipped = await fx.tx
    .update(toolCalls)
    .set({ status: "skipped", isError: true, errorCode: "skipped", result: content, endedAt: sql`now()` })
    .where(and(eq(toolCalls.runId, run.id), eq(toolCalls.stepIndex, stepRef.index), inArray(toolCalls.status, ["queued", "awaiting_approval"])))
    .returning();
  await cancelPendingApprovals(
    fx,
    run,
    skipped.map((call) => call.id),
    "an earlier call in this batch ended the batch",
  );
  for (const call of skipped) {
    await answerCall(fx, run, call, { status: "skipped", isError: true, errorCode: "skipped", content }, stepRef);
  }
}
