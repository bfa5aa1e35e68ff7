import type { RunId, TenantId } from "./ids.js";
/**
 * What a run needs next (SPEC D1): stored on the run row (the outbox) and turned
 * into a BullMQ job whose id is derived from the work (src/queue/job-types.ts).
 */
export type NextJob =
  | { kind: "step"; stepIndex: number }
  /** `resume` is set when an approval decision resumes a parked batch: the fence it was parked at, so each resume gets its own job id. */
  | { kind: "batch"; stepIndex: number; resume?: number };

/** A run's next job, to be enqueued once the transaction that decided it has committed. */
export interface DispatchRequest {
  runId: RunId;
  /** The run's tenant: its load sets the job's priority (SPEC X5). */
  tenantId: TenantId;
  next: NextJob;
  redispatches: number;
  /**
   * A batch's project placement as the statement that decided the batch read it (SPEC W3). Used
   * without asking Postgres again when it names the dispatching process's own host, which is live
   * while the process runs; a placement that moved on meanwhile is refused by the batch's claim,
   * like one that moves after it was read.
   */
  placement?: { hostId: string; epoch: number };
}
