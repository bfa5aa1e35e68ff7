import type { NextJob } from "../core/next-job.js";
import type { RunId } from "../ids.js";
import { slotTag } from "../net/redis-connection.js";

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
  /**
   * Bookkeeping of a step waiting for its provider (PR3), never state: since when it waits (its
   * `run_status` event was sent; cleared once a profile takes it), and since its first 429 or
   * overload answer (what bounds waiting those out). A job enqueued again starts both afresh.
   */
  waitingSince?: number;
  throttledSince?: number;
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

/** The kinds of job queues, as metrics, logs and liveness records name them. */
export const stepQueueName = "steps";
export const toolQueueName = "tools";

/** A host's tool-batch queue (SPEC W3), as BullMQ names it: only the workers of that host take its jobs. */
export function hostToolQueueName(hostId: string): string {
  return queueName(`${toolQueueName}-${hostId}`);
}

/**
 * The BullMQ name of a queue: its base name as a Redis Cluster hash tag. BullMQ's keys are
 * `<prefix>:<name>:<suffix>` and its Lua scripts touch several of one queue's keys at once, so
 * they must share a slot; the tag puts every key of one queue on one slot, and different queues
 * (and shards, and per-host queues such as `tools-<hostId>`) on different slots. BullMQ forbids
 * `:` in a name.
 */
export function queueName(base: string): string {
  if (base.includes(":") || /[{}]/.test(base)) throw new Error(`a queue's base name has no ':', '{' or '}': ${JSON.stringify(base)}`);
  return slotTag(base);
}

/** The step queues' BullMQ names: `{steps}` alone, or `{steps-0}` ... `{steps-<shards - 1>}`. */
export function stepQueueNames(shards: number): string[] {
  return shards <= 1 ? [queueName(stepQueueName)] : Array.from({ length: shards }, (_, shard) => queueName(`${stepQueueName}-${shard}`));
}

/**
 * The step shard of a run's jobs: fixed by its id, so a run's steps (one after another) stay in
 * one queue, in order, and a session's runs (one active at a time) follow each other in order too.
 */
export function stepShardOf(runId: RunId, shards: number): number {
  if (shards <= 1) return 0;
  // FNV-1a: cheap, stable across processes and versions, spread well enough over a few shards.
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    hash ^= runId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/**
 * A host's queue of the API's requests on its workspace copies (SPEC W3, src/hosts/host-request.ts):
 * reverts, the trash, a rewind's look at the folder. Only the workers of that host take its jobs.
 */
export function hostRequestQueueName(hostId: string): string {
  return queueName(`host-requests-${hostId}`);
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
