import { and, eq, isNull } from "drizzle-orm";
import { isTerminalRunStatus } from "../core/run-status.js";
import { sessions, type ActivePolicy, type OnInterrupted } from "../db/schema.js";
import { FoyaError, notFound } from "../errors.js";
import type { Services } from "../services.js";
import { fullAccessRefusal, readTenantSettings } from "../tenants/tenant-settings.js";
import { activateRun, cancelRunInTransaction, type RunRow } from "./run-lifecycle.js";
import { TransientConflictError, transact } from "../store/transact.js";
import { insertRun, lockRun } from "../store/runs.js";

/**
 * Accepts a turn. The run row, its user message and its first job intent
 * commit together (the outbox, SPEC X4); the job is enqueued after the commit,
 * and the sweeper enqueues it again if this process dies in between.
 * A session with an active run follows `ifActive` (X6). A Full Access session starts
 * nothing once the operator's grant is gone (S8).
 */
export async function createRun(
  services: Pick<Services, "config" | "db" | "bus" | "dispatcher" | "failpoints">,
  input: { tenantId: string; sessionId: string; input: string; ifActive: ActivePolicy; onInterrupted?: OnInterrupted },
): Promise<RunRow> {
  return transact(
    services,
    async (fx) => {
      // Lock order everywhere is run, then session (workers lock their run, then bump the
      // session's event counter), so the active run is locked before the session row.
      const [peek] = await fx.tx
        .select({ activeRunId: sessions.activeRunId, approvalMode: sessions.approvalMode })
        .from(sessions)
        .where(and(eq(sessions.id, input.sessionId), eq(sessions.tenantId, input.tenantId), isNull(sessions.deletedAt)));
      if (!peek) throw notFound("session");
      if (peek.approvalMode === "full_access") {
        const settings = await readTenantSettings(fx.tx, input.tenantId);
        if (!settings) throw notFound("tenant");
        const refusal = fullAccessRefusal(services.config, settings);
        if (refusal) throw new FoyaError("full_access_not_granted", `This session uses Full Access. ${refusal}`);
      }
      const active = peek.activeRunId
        ? await lockRun(fx.tx, peek.activeRunId)
        : undefined;
      const [session] = await fx.tx
        .select()
        .from(sessions)
        .where(and(eq(sessions.id, input.sessionId), isNull(sessions.deletedAt)))
        .for("update");
      if (!session) throw notFound("session");
      if (session.activeRunId !== peek.activeRunId) throw new TransientConflictError("the session's active run changed");
      const isActive = active !== undefined && !isTerminalRunStatus(active.status);
      if (isActive && input.ifActive === "reject") {
        throw new FoyaError("conflict", `session already has an active run (${active.id}); send ifActive "enqueue" or "interrupt" to change that`);
      }
      if (isActive && input.ifActive === "interrupt") {
        await cancelRunInTransaction(fx, active, { code: "superseded", message: "interrupted by a new turn" }, false);
      }
      const run = await insertRun(fx.tx, {
        tenantId: input.tenantId,
        sessionId: session.id,
        input: input.input,
        onInterrupted: input.onInterrupted ?? session.onInterrupted,
      });
      const waitBehindActive = isActive && input.ifActive === "enqueue";
      if (!waitBehindActive) {
        const ordinal = await activateRun(fx, run);
        return { ...run, ordinal };
      }
      return run;
    },
    { afterCommit: () => services.failpoints.hit("api.after_run_commit") },
  );
}
