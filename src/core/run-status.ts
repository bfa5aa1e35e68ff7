/**
 * Run state machine (SPEC D2, section 17). Postgres `runs.status` holds exactly
 * these values; every change goes through a guarded UPDATE whose WHERE clause
 * lists the statuses `runTransitions` allows to reach the new one.
 *
 *   queued ──► running ◄──► awaiting_approval
 *     │          │                 │
 *     └──────────┴─────────────────┴──► completed | failed | cancelled | interrupted
 */
export const runStatuses = ["queued", "running", "awaiting_approval", "completed", "failed", "cancelled", "interrupted"] as const;
export type RunStatus = (typeof runStatuses)[number];

export const activeRunStatuses = ["queued", "running", "awaiting_approval"] as const satisfies readonly RunStatus[];
export type ActiveRunStatus = (typeof activeRunStatuses)[number];
export type TerminalRunStatus = Exclude<RunStatus, ActiveRunStatus>;

export const runTransitions: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  queued: ["running", "failed", "cancelled"],
  running: ["awaiting_approval", "completed", "failed", "cancelled", "interrupted"],
  awaiting_approval: ["running", "failed", "cancelled", "interrupted"],
  completed: [],
  failed: [],
  cancelled: [],
  interrupted: [],
};

/** Statuses from which `to` may be reached: the WHERE clause of a guarded update. */
export function runStatusesLeadingTo(to: RunStatus): RunStatus[] {
  return runStatuses.filter((from) => runTransitions[from].includes(to));
}

export function isTerminalRunStatus(status: RunStatus): status is TerminalRunStatus {
  return runTransitions[status].length === 0;
}

/**
 * Statuses in which a job may claim its run: a queued run starts (queued → running),
 * a running run's next job takes it over. A parked run (awaiting approval) has no job.
 */
export const claimableRunStatuses = ["queued", "running"] as const satisfies readonly RunStatus[];
