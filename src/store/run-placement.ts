import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { NextJob } from "../core/next-job.js";
import type { Database } from "../db/client.js";
import { runs, sessions } from "../db/schema.js";
import { type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import type { RunRow } from "./run-rows.js";

/**
 * A run's place in its session (SPEC X6): created `queued`, given its ordinal and first job when
 * it becomes the session's active run, and the session's slot released when it ends.
 */

/** insertRun: a new run, `queued`, with no place in history yet. */
export async function insertRun(
  tx: Database,
  values: { tenantId: TenantId; sessionId: SessionId; input: string; onInterrupted?: RunRow["onInterrupted"] },
): Promise<RunRow> {
  const [row] = await tx
    .insert(runs)
    .values({ id: newId("run"), ...values, status: "queued" })
    .returning();
  if (!row) throw new Error("run insert returned nothing");
  return row;
}

/**
 * placeRun
 * Guard: the run has no place yet (a run placed twice is a bug: it throws). Result: its ordinal in the session.
 * Makes the run the session's active run and records its first step job (the outbox).
 */
export async function placeRun(tx: Database, queued: { id: RunId; sessionId: SessionId }): Promise<{ ordinal: number; next: NextJob }> {
  const [session] = await tx
    .update(sessions)
    .set({ runCount: sql`${sessions.runCount} + 1`, activeRunId: queued.id })
    .where(eq(sessions.id, queued.sessionId))
    .returning({ runCount: sessions.runCount });
  if (!session) throw new Error(`session ${queued.sessionId} vanished`);
  const next: NextJob = { kind: "step", stepIndex: 0 };
  const placed = await tx
    .update(runs)
    .set({ ordinal: session.runCount, nextJob: next, redispatches: 0, updatedAt: sql`now()` })
    .where(and(eq(runs.id, queued.id), isNull(runs.ordinal)))
    .returning({ id: runs.id });
  if (placed.length === 0) throw new Error(`run ${queued.id} already has a place`);
  return { ordinal: session.runCount, next };
}

/**
 * releaseSessionSlot
 * Guard: the run is the session's active run. Result: the oldest run waiting behind it
 * (locked), unless the session was deleted or `takeNext` is false.
 */
export async function releaseSessionSlot(tx: Database, sessionId: SessionId, runId: RunId, takeNext: boolean): Promise<RunRow | undefined> {
  const [session] = await tx
    .update(sessions)
    .set({ activeRunId: null })
    .where(and(eq(sessions.id, sessionId), eq(sessions.activeRunId, runId)))
    .returning({ deletedAt: sessions.deletedAt });
  if (!session || session.deletedAt || !takeNext) return undefined;
  const [waiting] = await tx
    .select()
    .from(runs)
    .where(and(eq(runs.sessionId, sessionId), eq(runs.status, "queued"), isNull(runs.ordinal)))
    .orderBy(asc(runs.createdAt))
    .limit(1)
    .for("update");
  return waiting;
}
