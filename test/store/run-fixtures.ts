import type { NextJob } from "../../src/core/next-job.js";
import type { ProjectId, RunId, SessionId, TenantId } from "../../src/ids.js";
import { historyOrigin, type CallRow, type ClaimedRun, type RunRow } from "../../src/store/runs.js";
import { testPlacement, type StoreDb } from "../helpers/store-db.js";

/**
 * Runs in the states the contract tests start from, reached through the store's own statements
 * (never by writing rows by hand): placed, claimed by a step job, committed with calls and
 * claimed by their batch.
 */

export const leaseMs = 30_000;
export const stepJob: NextJob = { kind: "step", stepIndex: 0 };
export const batchJob: NextJob = { kind: "batch", stepIndex: 0 };

export interface PlacedRun {
  run: RunRow & { ordinal: number };
  tenantId: TenantId;
  projectId: ProjectId;
  sessionId: SessionId;
}

/** A new session's run, given its place and its first step job (the outbox). */
export async function placedRun(db: StoreDb): Promise<PlacedRun> {
  const session = await db.newSession();
  const run = await db.store.transaction(async (tx) => {
    const row = await tx.runs.insertRun({ tenantId: session.tenantId, sessionId: session.sessionId, input: "hello" });
    const { ordinal, next } = await tx.runs.placeRun(row);
    return { ...row, ordinal, nextJob: next };
  });
  return { ...session, run };
}

/** The run as its step job's claim leaves it: running, under a fence one higher. */
export async function claimedStep(db: StoreDb, placed: PlacedRun, owner = "worker-a/job-1"): Promise<ClaimedRun> {
  const claim = await db.store.runs.claimStep({
    runId: placed.run.id,
    stepIndex: 0,
    next: stepJob,
    owner,
    leaseMs,
    historyAfter: historyOrigin,
  });
  if (claim.kind !== "claimed") throw new Error(`step claim ${claim.kind}`);
  return claim.run;
}

export interface Batch extends PlacedRun {
  /** The run as the batch job's claim leaves it. */
  held: ClaimedRun;
  /** The step's calls, `queued`, in model order. */
  calls: CallRow[];
}

/** A run whose step committed `names.length` calls and whose batch job claimed it (no call started). */
export async function claimedBatch(db: StoreDb, names: readonly string[], owner = "worker-a/job-2"): Promise<Batch> {
  const placed = await placedRun(db);
  const step = await claimedStep(db, placed);
  const toolCalls = names.map((name, index) => ({ callId: `call-${index}`, name, argumentsRaw: "{}" }));
  const committed = await db.store.steps.commitStep(
    step,
    { index: 0, attempt: 1, tools: [...names] },
    { text: "", toolCalls, finish: { reason: "tool_calls" }, pendingEvents: [] },
  );
  if (!committed) throw new Error("step commit refused");
  const claim = await db.store.runs.claimBatch({
    runId: placed.run.id,
    stepIndex: 0,
    next: batchJob,
    owner,
    leaseMs,
    startPreGranted: false,
    placement: testPlacement,
  });
  if (claim.kind !== "claimed") throw new Error(`batch claim ${claim.kind}`);
  return { ...placed, held: claim.run, calls: claim.extra.calls };
}

/** The run's row as Postgres has it now. */
export async function runRow(db: StoreDb, runId: RunId): Promise<RunRow> {
  const row = await db.store.runs.readRun(runId);
  if (!row) throw new Error(`no run ${runId}`);
  return row;
}
