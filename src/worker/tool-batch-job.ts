import { DelayedError, type Job } from "bullmq";
import { and, asc, eq, exists, inArray, sql } from "drizzle-orm";
import type { ResultPart } from "../core/history.js";
import { runs, steps, toolCalls } from "../db/schema.js";
import type { DbExecutor } from "../db/client.js";
import { appendEvents } from "../events/event-store.js";
import type { ToolBatchJobData } from "../queue/job-types.js";
import { insertToolMessage } from "../runs/history-store.js";
import { closeOpenCalls, endRun, type RunRow } from "../runs/run-lifecycle.js";
import { StaleWorkError, transact, transactFenced, type Effects } from "../runs/transact.js";
import type { ToolContext, ToolResult } from "../tools/tool.js";
import { claimRun } from "./claim-run.js";
import type { JobContext, JobOutcome } from "./job-context.js";
import { loadSessionAndProject } from "./load-run-context.js";
import { planLanes, runWithLimit } from "./tool-lanes.js";

type CallRow = typeof toolCalls.$inferSelect;
type ClaimedRun = RunRow & { ordinal: number };

/** At most this many calls of one batch run at once (SPEC P3). */
const maxParallelCalls = 5;

/**
 * Runs the tool calls of one model response. Each call is marked `running`
 * before its tool starts and gets its result in the same transaction as its
 * terminal status. A call found `running` when the batch is claimed was never
 * confirmed: it is marked `interrupted`, never run again, and so is the run (D3).
 */
export async function processToolBatchJob(context: JobContext, job: Job<ToolBatchJobData>, token: string | undefined): Promise<JobOutcome> {
  const { services, leases, aborts } = context;
  const { runId, stepIndex } = job.data;
  const owner = `${context.workerId}/${job.id}`;

  const claimed = await transact(services, async (fx) => {
    const claim = await claimRun(fx.tx, runId, { kind: "batch", stepIndex }, owner, services.config.leaseMs);
    if (claim.kind !== "claimed") return claim;
    const calls = await fx.tx
      .select()
      .from(toolCalls)
      .where(and(eq(toolCalls.runId, runId), eq(toolCalls.stepIndex, stepIndex)))
      .orderBy(asc(toolCalls.callIndex));
    if (calls.some((call) => call.status === "running")) {
      await closeOpenCalls(fx, claim.run, "interrupted");
      await endRun(fx, claim.run, "interrupted", {
        fence: claim.run.fence,
        error: { code: "worker_lost", message: "a tool call was running when its worker stopped; it will not be run again" },
      });
      return { kind: "gone" as const, reason: "interrupted" };
    }
    const [step] = await fx.tx.select().from(steps).where(and(eq(steps.runId, runId), eq(steps.index, stepIndex)));
    const { session, project } = await loadSessionAndProject(fx.tx, claim.run.sessionId);
    return { kind: "claimed" as const, run: claim.run, calls, session, project, stepTools: step?.tools ?? [], attempt: step?.attempt ?? 1 };
  });

  if (claimed.kind === "busy") {
    await job.moveToDelayed(Date.now() + claimed.retryInMs, token);
    throw new DelayedError();
  }
  if (claimed.kind === "gone") return claimed;

  const { run, calls, session, project, stepTools } = claimed;
  const stepRef = { index: stepIndex, attempt: claimed.attempt };
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

    const pending = calls.filter((call) => call.status === "queued");
    let endBatch = false;
    let stale = false;
    const groups = planLanes(pending, (call) => services.executor.isParallel(call));
    for (const group of groups) {
      if (endBatch || stale || controller.signal.aborted) break;
      await runWithLimit(group, maxParallelCalls, async (call) => {
        if (stale || controller.signal.aborted) return;
        const outcome = await runOneCall(context, run, call, owner, toolContext(call), stepRef);
        if (outcome === "stale") stale = true;
        else if (outcome.endBatch) endBatch = true;
      });
    }
    if (controller.signal.aborted) return { kind: "cancelled" };
    if (stale) return { kind: "stale" };

    const finished = await transactFenced(services, async (fx) => {
      await lockFencedRun(fx.tx, runId, run.fence);
      if (endBatch) await skipRemaining(fx, run, stepIndex);
      const open = await fx.tx
        .select({ id: toolCalls.id })
        .from(toolCalls)
        .where(and(eq(toolCalls.runId, runId), eq(toolCalls.stepIndex, stepIndex), inArray(toolCalls.status, ["queued", "running", "awaiting_approval"])));
      if (open.length > 0) throw new StaleWorkError("calls of this batch are still open");
      const nextIndex = stepIndex + 1;
      if (nextIndex >= services.config.maxStepsPerRun) {
        await endRun(fx, run, "failed", {
          fence: run.fence,
          error: { code: "max_steps_exceeded", message: `the run reached the limit of ${services.config.maxStepsPerRun} steps` },
        });
        return true;
      }
      const next = { kind: "step", stepIndex: nextIndex } as const;
      await fx.tx
        .update(runs)
        .set({ stepIndex: nextIndex, nextJob: next, redispatches: 0, leaseOwner: null, leaseUntil: null, updatedAt: sql`now()` })
        .where(eq(runs.id, runId));
      fx.dispatch({ runId, next, redispatches: 0 });
      return true;
    });
    return finished ? { kind: "committed", detail: `${pending.length} calls` } : { kind: "stale" };
  } finally {
    aborts.unregister(runId, controller);
    leases.release(owner);
  }
}

async function runOneCall(
  context: JobContext,
  run: ClaimedRun,
  call: CallRow,
  owner: string,
  toolContext: ToolContext,
  stepRef: { index: number; attempt: number },
): Promise<ToolResult | "stale"> {
  const { services } = context;
  const started = await transactFenced(services, async (fx) => {
    const marked = await fx.tx
      .update(toolCalls)
      .set({ status: "running", execFence: run.fence, executedBy: owner, startedAt: sql`now()` })
      .where(
        and(
          eq(toolCalls.id, call.id),
          eq(toolCalls.status, "queued"),
          exists(
            fx.tx
              .select({ one: sql`1` })
              .from(runs)
              .where(and(eq(runs.id, run.id), eq(runs.fence, run.fence), eq(runs.status, "running"))),
          ),
        ),
      )
      .returning({ id: toolCalls.id });
    if (marked.length === 0) throw new StaleWorkError();
    await fx.emit(run.tenantId, run.sessionId, [
      { runId: run.id, step: stepRef, body: { type: "tool_update", callId: call.callId, status: "running" } },
    ]);
    return true;
  });
  if (!started) return "stale";

  const result = await services.executor.execute(toolContext, { callId: call.callId, name: call.name, argumentsRaw: call.argumentsRaw });
  const status = result.isError ? "failed" : "succeeded";
  const committed = await transactFenced(services, async (fx) => {
    const updated = await fx.tx
      .update(toolCalls)
      .set({ status, result: result.content, isError: result.isError === true, errorCode: result.errorCode ?? null, endedAt: sql`now()` })
      .where(and(eq(toolCalls.id, call.id), eq(toolCalls.status, "running"), eq(toolCalls.execFence, run.fence)))
      .returning({ id: toolCalls.id });
    if (updated.length === 0) throw new StaleWorkError();
    await insertToolMessage(fx.tx, {
      tenantId: run.tenantId,
      sessionId: run.sessionId,
      runId: run.id,
      runOrdinal: run.ordinal,
      stepIndex: call.stepIndex,
      callIndex: call.callIndex,
      callId: call.callId,
      name: call.name,
      status,
      isError: result.isError === true,
      content: result.content,
    });
    await fx.emit(run.tenantId, run.sessionId, [
      {
        runId: run.id,
        step: stepRef,
        body: {
          type: "tool_end",
          callId: call.callId,
          name: call.name,
          status,
          isError: result.isError === true,
          ...(result.errorCode ? { errorCode: result.errorCode } : {}),
          preview: previewOf(result.content),
          ...(result.displayDiff ? { diff: result.displayDiff } : {}),
        },
      },
    ]);
    return true;
  });
  return committed ? result : "stale";
}

async function lockFencedRun(tx: DbExecutor, runId: string, fence: number): Promise<void> {
  const locked = await tx
    .select({ id: runs.id })
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.fence, fence), eq(runs.status, "running")))
    .for("update");
  if (locked.length === 0) throw new StaleWorkError();
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
    await insertToolMessage(fx.tx, {
      tenantId: run.tenantId,
      sessionId: run.sessionId,
      runId: run.id,
      runOrdinal: run.ordinal,
      stepIndex,
      callIndex: call.callIndex,
      callId: call.callId,
      name: call.name,
      status: "skipped",
      isError: true,
      content: call.result ?? [],
    });
    await fx.emit(run.tenantId, run.sessionId, [
      { runId: run.id, step: null, body: { type: "tool_end", callId: call.callId, name: call.name, status: "skipped", isError: true, errorCode: "skipped", preview: previewOf(call.result ?? []) } },
    ]);
  }
}

function previewOf(content: readonly ResultPart[]): string {
  const text = content.map((part) => (part.type === "text" ? part.text : `[${part.type} ${part.artifactId}]`)).join("\n");
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
