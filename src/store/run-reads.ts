import { and, eq, inArray } from "drizzle-orm";
import { activeRunStatuses } from "../core/run-status.js";
import type { Database } from "../db/client.js";
import { runs } from "../db/schema.js";
import type { RunRow } from "./run-rows.js";
import { heldBy } from "./run-transitions.js";
import type { RunId, SessionId, TenantId } from "../ids.js";

/** Reads and row locks of runs: what a transaction locks before it decides on a run's transition. */

/**
 * Locks the run a job holds, for a transaction that reads and then writes its calls.
 * Guard: fence, running. Result: whether this attempt still holds the run.
 */
export async function lockHeldRun(tx: Database, held: { id: RunId; fence: number }): Promise<boolean> {
  const [locked] = await tx.select({ id: runs.id }).from(runs).where(heldBy(held)).for("update");
  return locked !== undefined;
}

/** Locks any run by id, for decisions, cancellations and deliveries that start from outside its jobs. */
export async function lockRun(tx: Database, runId: RunId): Promise<RunRow | undefined> {
  const [row] = await tx.select().from(runs).where(eq(runs.id, runId)).for("update");
  return row;
}

/** Locks a run of one tenant by id: a cancel by request (another tenant's id is not found). */
export async function lockRunOfTenant(tx: Database, tenantId: TenantId, runId: RunId): Promise<RunRow | undefined> {
  const [row] = await tx
    .select()
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.tenantId, tenantId)))
    .for("update");
  return row;
}

/** Locks a session's active and waiting runs (SPEC F4: deleting the session cancels them); runs before the session, the lock order. */
export async function lockOpenRunsOfSession(tx: Database, tenantId: TenantId, sessionId: SessionId): Promise<RunRow[]> {
  return tx
    .select()
    .from(runs)
    .where(and(eq(runs.sessionId, sessionId), eq(runs.tenantId, tenantId), inArray(runs.status, [...activeRunStatuses])))
    .for("update");
}

/** This tenant's run by id (SPEC D8: another tenant's id is not found). */
export async function runOfTenant(db: Database, tenantId: TenantId, runId: RunId): Promise<RunRow | undefined> {
  const [run] = await db
    .select()
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.tenantId, tenantId)));
  return run;
}

/** A run's row as this transaction sees it. */
export async function readRun(tx: Database, runId: RunId): Promise<RunRow | undefined> {
  const [row] = await tx.select().from(runs).where(eq(runs.id, runId));
  return row;
}
