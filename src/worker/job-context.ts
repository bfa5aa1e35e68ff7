import type { Job } from "bullmq";
import type { JobDeps } from "./job-deps.js";
import type { LeaseKeeper } from "./lease-keeper.js";
import type { RunAborts } from "./run-aborts.js";
import type { SessionContextCache } from "./session-context-cache.js";
import type { BackgroundCommands } from "./background-commands.js";
import type { HistoryCache } from "./step/history-cache.js";

/** What a job processor receives: the shared dependencies plus this process's own bookkeeping. */
export interface JobContext {
  deps: JobDeps;
  workerId: string;
  /** The host this worker belongs to (SPEC W3): its tool-batch queue and workspace root. */
  hostId: string;
  leases: LeaseKeeper;
  aborts: RunAborts;
  sessionContexts: SessionContextCache;
  /** Histories this process read last, so each step reads only what is new (O1). */
  histories: HistoryCache;
  commands: BackgroundCommands;
}

/** Outcome of one job, for logs and tests; failures that should be retried throw instead. */
export type JobOutcome =
  | { kind: "committed"; detail: string }
  | { kind: "gone"; reason: string }
  | { kind: "busy"; retryInMs: number }
  | { kind: "stale" }
  | { kind: "cancelled" }
  | { kind: "failed"; code: string };

/** The lease owner a job claims its run as: this worker and the job. */
export function jobOwner(context: Pick<JobContext, "workerId">, job: Pick<Job, "id">): string {
  return `${context.workerId}/${job.id}`;
}
