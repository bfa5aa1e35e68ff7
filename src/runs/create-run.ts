import { isTerminalRunStatus } from "../core/run-status.js";
import { FoyaError, notFound } from "../errors.js";
import type { Failpoints } from "../failpoints.js";
import { newRunRefusal } from "./quota-refusal.js";
import type { TenantQuotas } from "../core/tenant-quotas.js";
import { effectiveQuotas, fullAccessRefusal, tenantSettingsOf } from "../tenants/tenant-settings.js";
import { admitOrHold, cancelRunInTransaction, type RunRow } from "./run-lifecycle.js";
import { TransientConflictError } from "../store/transact.js";
import type { StoreTx } from "../store/store.js";
import type { Effects, UnitOfWork } from "../unit-of-work/unit-of-work.js";
import type { Config } from "../config.js";
import type { ActivePolicy, OnInterrupted } from "../core/session.js";
import type { SessionId, TenantId } from "../ids.js";

/**
 * Accepts a turn. The run row, its user message and its first job intent
 * commit together (the outbox, SPEC X4); the job is enqueued after the commit,
 * and the sweeper enqueues it again if this process dies in between.
 * A session with an active run follows `ifActive` (X6). A Full Access session starts
 * nothing once the operator's grant is gone (S8).
 */
export async function createRun(
  services: { unitOfWork: UnitOfWork; config: Config; failpoints: Failpoints },
  input: { tenantId: TenantId; sessionId: SessionId; input: string; ifActive: ActivePolicy; onInterrupted?: OnInterrupted },
): Promise<RunRow> {
  return services.unitOfWork.transact(
    async (fx) => {
      // The session, the tenant's settings and its waiting runs in one round trip.
      const reads = await fx.store.tenantAdmission.newRunReads(input.tenantId, input.sessionId);
      const peek = reads.session;
      if (!peek) throw notFound("session");
      if (!reads.tenant) throw notFound("tenant");
      const settings = tenantSettingsOf(reads.tenant);
      if (peek.approvalMode === "full_access") {
        const refusal = fullAccessRefusal(services.config, settings);
        if (refusal) throw new FoyaError("full_access_not_granted", `This session uses Full Access. ${refusal}`);
      }
      await refuseOverQuota(fx.store, input.tenantId, effectiveQuotas(services.config, settings), reads.waitingRuns);
      if (!peek.activeRunId) return acceptOnFreeSession(fx, input);
      // Lock order everywhere is run, then session (workers lock their run, then bump the
      // session's event counter), so the active run is locked before the session row.
      const active = await fx.store.runs.lockRun(peek.activeRunId);
      const session = await fx.store.sessions.lockLiveSession(input.sessionId);
      if (!session) throw notFound("session");
      if (session.activeRunId !== peek.activeRunId) throw new TransientConflictError("the session's active run changed");
      const isActive = active !== undefined && !isTerminalRunStatus(active.status);
      if (isActive && input.ifActive === "reject") {
        throw new FoyaError(
          "conflict",
          `session already has an active run (${active.id}); send ifActive "enqueue" or "interrupt" to change that`,
        );
      }
      if (isActive && input.ifActive === "interrupt") {
        await cancelRunInTransaction(fx, active, { code: "superseded", message: "interrupted by a new turn" }, false);
      }
      const run = await fx.store.runs.insertRun({
        tenantId: input.tenantId,
        sessionId: session.id,
        input: input.input,
        onInterrupted: input.onInterrupted ?? session.onInterrupted,
      });
      const waitBehindActive = isActive && input.ifActive === "enqueue";
      if (!waitBehindActive) {
        const ordinal = await admitOrHold(fx, run);
        return ordinal === null ? run : { ...run, ordinal };
      }
      return run;
    },
    { afterCommit: () => services.failpoints.hit("api.after_run_commit") },
  );
}

/**
 * The common turn, on a session with no active run: the run is inserted and activated, or holds
 * the session's slot waiting for one of its tenant's, in one statement that also takes the session
 * (`acceptRun`). A session that got an active run (or went) since the reads is read again.
 */
async function acceptOnFreeSession(
  fx: Effects,
  input: { tenantId: TenantId; sessionId: SessionId; input: string; onInterrupted?: OnInterrupted },
): Promise<RunRow> {
  const accepted = await fx.store.runs.acceptRun(
    {
      tenantId: input.tenantId,
      sessionId: input.sessionId,
      input: input.input,
      ...(input.onInterrupted ? { onInterrupted: input.onInterrupted } : {}),
    },
    fx.quotas.activeRuns,
  );
  if (!accepted) throw new TransientConflictError("the session got an active run, or went, since it was read");
  if (accepted.kind === "holding") return accepted.run;
  fx.track(accepted.events);
  fx.dispatch({ runId: accepted.run.id, tenantId: accepted.run.tenantId, next: accepted.next, redispatches: 0 });
  return accepted.run;
}

/** Refuses a new run past one of the tenant's quotas (SPEC X5) with 429, naming the quota and the use, and Retry-After. */
async function refuseOverQuota(tx: StoreTx, tenantId: TenantId, quotas: TenantQuotas, waitingRuns: number): Promise<void> {
  const refusal = await newRunRefusal(tx.tenantAdmission, tenantId, quotas, waitingRuns);
  if (refusal) throw new FoyaError("quota_exceeded", refusal.message, { retryAfterSeconds: refusal.retryAfterSeconds });
}
