import { DelayedError, type Job } from "bullmq";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { StepRef } from "../core/events.js";
import { runs, steps, toolCalls } from "../db/schema.js";
import { appendEvents } from "../events/event-store.js";
import type { ToolBatchJobData } from "../queue/job-types.js";
import { answerCall } from "../runs/answer-call.js";
import { closeOpenCalls, endRun, type RunRow } from "../runs/run-lifecycle.js";
import { StaleWorkError, transact, transactFenced, type Effects } from "../runs/transact.js";
import type { Services } from "../services.js";
import type { ToolContext, ToolResult } from "../tools/tool.js";
import { claimRun } from "./claim-run.js";
import type { JobContext, JobOutcome } from "./job-context.js";
import { planLanes, runWithLimit } from "./tool-lanes.js";

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
  const owner = `${context.workerId}/${job.id}`;

  const claimed = await transact(services, async (fx) => {
    const claim = await claimRun(fx.tx, runId, { kind: "batch", stepIndex }, owner, services.config.leaseMs);
    if (claim.kind !== "claimed") return claim;
    const { run } = claim;
    const rows = await fx.tx
      .select({ call: toolCalls, tools: steps.tools, attempt: steps.attempt })
      .from(steps)
      .innerJoin(toolCalls, eq(toolCalls.stepId, steps.id))
      .where(and(eq(steps.runId, runId), eq(steps.index, stepIndex)))
      .orderBy(asc(toolCalls.callIndex));
    const calls = rows.map((row) => row.call);
    if (calls.some((call) => call.status === "running")) {
      await closeOpenCalls(fx, run, "interrupted");
      await endRun(fx, run, "interrupted", {
        fence: run.fence,
        error: { code: "worker_lost", message: "a tool call was running when its worker stopped; it will not be run again" },
      });
      return { kind: "gone" as const, reason: "interrupted" };
    }
    const stepRef: StepRef = { index: stepIndex, attempt: rows[0]?.attempt ?? 1 };
    const groups = planLanes(
      calls.filter((call) => call.status === "queued"),
      (call) => services.executor.isParallel(call),
    );
    if (groups[0]) await markRunning(fx, run, groups[0], owner, stepRef);
    const { session, project } = await context.sessionContexts.get(fx.tx, run.sessionId);
    return { kind: "claimed" as const, run, groups, session, project, stepTools: rows[0]?.tools ?? [], stepRef };
  });

  if (claimed.kind === "busy") {
    await job.moveToDelayed(Date.now() + claimed.retryInMs, token);
    throw new DelayedError();
  }
  if (claimed.kind === "gone") return claimed;

  const { run, groups, session, project, stepTools, stepRef } = claimed;
  leases.hold(owner);
  const controller = aborts.register(runId);
  try {
    const provider = services.providers.get(session.providerProfile);
    const toolContext = (call: CallRow): ToolContext => ({
      tenantId: run.tenantId,
      sessionId: run.sessionId,
      runId,
      projectId: project.id,
      workspaceDir: project.workspacePath,
      approvalMode: session.approvalMode,
      provider: { profile: provider.profile, model: session.model ?? provider.defaultModel },
      exposedTools: stepTools,
      signal: controller.signal,
      reportProgress(message) {
        void appendEvents(services.db.db, run.tenantId, run.sessionId, [
          { runId, step: stepRef, body: { type: "tool_update", callId: call.callId, progress: message } },
        ])
          .then((stored) => services.bus.publish(stored))
          .catch(() => {});
      },
    });

    let endBatch = false;
    let stale = false;
    let finished = false;
    for (const [groupIndex, group] of groups.entries()) {
      if (endBatch || stale || controller.signal.aborted) break;
      if (groupIndex > 0) {
        const marked = await transactFenced(services, async (fx) => markRunning(fx, run, group, owner, stepRef));
        if (marked === null) {
          stale = true;
          break;
        }
      }
      await runWithLimit(group, maxParallelCalls, async (call) => {
        if (stale) return;
        const result = await services.executor.execute(toolContext(call), { callId: call.callId, name: call.name, argumentsRaw: call.argumentsRaw });
        const outcome = await commitCall(services, run, call, result, stepRef);
        if (outcome === "stale") stale = true;
        else if (outcome === "finished") finished = true;
        if (result.endBatch) endBatch = true;
      });
    }
    if (finished) return { kind: "committed", detail: "batch done" };
    if (controller.signal.aborted) return { kind: "cancelled" };
    if (stale) return { kind: "stale" };

    // Reached when the last commit could not close the batch: an end-of-batch signal, or siblings committing at once.
    const closed = await transactFenced(services, async (fx) => {
      const [locked] = await fx.tx
        .select({ id: runs.id })
        .from(runs)
        .where(and(eq(runs.id, runId), eq(runs.fence, run.fence), eq(runs.status, "running")))
        .for("update");
      if (!locked) throw new StaleWorkError();
      if (endBatch) await skipRemaining(fx, run, stepIndex);
      if (!(await closeBatchIfDone(fx, services, run, stepIndex))) throw new StaleWorkError("calls of this batch are still open");
      return true;
    });
    return closed ? { kind: "committed", detail: "batch done" } : { kind: "stale" };
  } finally {
    aborts.unregister(runId, controller);
    leases.release(owner);
  }
}

/** Marks calls `running` before their tools start, guarded by the batch's fence. */
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
 * Stores one call's result with its terminal status, its tool message and its
 * `tool_end` event; if it was the batch's last open call, also moves the run on.
 */
async function commitCall(
  services: Services,
  run: ClaimedRun,
  call: CallRow,
  result: ToolResult,
  stepRef: StepRef,
): Promise<"committed" | "finished" | "stale"> {
  const status = result.isError ? "failed" : "succeeded";
  const outcome = await transactFenced(services, async (fx) => {
    const updated = await fx.tx
      .update(toolCalls)
      .set({ status, result: result.content, isError: result.isError === true, errorCode: result.errorCode ?? null, endedAt: sql`now()` })
      .where(and(eq(toolCalls.id, call.id), eq(toolCalls.status, "running"), eq(toolCalls.execFence, run.fence)))
      .returning({ id: toolCalls.id });
    if (updated.length === 0) throw new StaleWorkError();
    await answerCall(
      fx,
      run,
      call,
      {
        status,
        isError: result.isError === true,
        errorCode: result.errorCode ?? null,
        content: result.content,
        ...(result.displayDiff ? { diff: result.displayDiff } : {}),
      },
      stepRef,
    );
    return (await closeBatchIfDone(fx, services, run, call.stepIndex)) ? ("finished" as const) : ("committed" as const);
  });
  return outcome ?? "stale";
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
        sql`${runs.nextJob} = ${JSON.stringify({ kind: "batch", stepIndex })}::jsonb`,
      ),
    )
    .returning({ id: runs.id });
  if (moved.length === 0) throw new StaleWorkError();
  fx.dispatch({ runId: run.id, next, redispatches: 0 });
  return true;
}

/** After an end-of-batch signal, the remaining calls get `skipped` results so every call id has one (P6). */
async function skipRemaining(fx: Effects, run: ClaimedRun, stepIndex: number): Promise<void> {
  const skipped = await fx.tx
    .update(toolCalls)
    .set({
      status: "skipped",
      isError: true,
      errorCode: "skipped",
      result: [{ type: "text", text: "Skipped: an earlier call in this batch ended the batch." }],
      endedAt: sql`now()`,
    })
    .where(and(eq(toolCalls.runId, run.id), eq(toolCalls.stepIndex, stepIndex), eq(toolCalls.status, "queued")))
    .returning();
  for (const call of skipped) {
    await answerCall(fx, run, call, { status: "skipped", isError: true, errorCode: "skipped", content: call.result ?? [] }, null);
  }
}

