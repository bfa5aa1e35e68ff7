import type { NextJob } from "../core/next-job.js";
import type { RunId } from "../ids.js";

/**
 * Job payloads carry ids only (SPEC D1). `NextJob` (src/core/next-job.ts) is what a
 * run needs next; it is stored on the run row (the outbox) and turned into a BullMQ
 * job whose id is derived from the work, so enqueuing the same work twice is a no-op.
 */

export interface StepJobData {
  runId: RunId;
  stepIndex: number;
  /** W3C `traceparent` of the work that enqueued the job, when tracing is on (SPEC X8). */
  trace?: string;
}

export interface ToolBatchJobData {
  runId: RunId;
  stepIndex: number;
  resume?: number;
  /**
   * The placement of the run's project the job was routed by (SPEC W3): the batch claims the run
   * only while the project is still placed on the worker's host at this epoch. Absent in a job
   * enqueued by hand: the worker then reads the placement itself.
   */
  placement?: { hostId: string; epoch: number };
  /** W3C `traceparent` of the work that enqueued the job, when tracing is on (SPEC X8). */
  trace?: string;
}

export const stepQueueName = "steps";
export const toolQueueName = "tools";

/** A host's tool-batch queue (SPEC W3): only the workers of that host take its jobs. */
export function hostToolQueueName(hostId: string): string {
  return `${toolQueueName}-${hostId}`;
}

/**
 * Derived job ids. `redispatch` is 0 for the first dispatch; the sweeper bumps it
 * when it re-enqueues work whose job was lost, so the new job cannot collide with
 * a finished job still kept in Redis under the old id. BullMQ forbids ':' in custom ids.
 */
export function jobIdFor(runId: RunId, next: NextJob, redispatch: number, placementEpoch?: number): string {
  const resumed = next.kind === "batch" && next.resume !== undefined ? `-a${next.resume}` : "";
  // A batch moved to another host (a new placement) is new work for BullMQ: its own id.
  const placed = next.kind === "batch" && placementEpoch !== undefined ? `-e${placementEpoch}` : "";
  const base = `${next.kind}-${runId}-${next.stepIndex}${resumed}${placed}`;
  return redispatch === 0 ? base : `${base}-r${redispatch}`;
}
