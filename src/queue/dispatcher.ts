import { Queue, type JobsOptions } from "bullmq";
import type { RedisConnection } from "../net/redis-connection.js";
import type { StepJobData, ToolBatchJobData } from "./job-types.js";
import { hostToolQueueName, jobIdFor, stepQueueNames, stepShardOf } from "./job-types.js";
import type { TenantLoad } from "./tenant-load.js";
import type { DispatchRequest } from "../core/next-job.js";
import type { RunId } from "../ids.js";

/** Where a run's project is placed (SPEC W3), placing it if needed; undefined when no host is live. */
export type PlaceRun = (runId: DispatchRequest["runId"]) => Promise<{ hostId: string; epoch: number } | undefined>;

export interface Dispatcher {
  /** The step queue's shards (`FOYA_STEP_QUEUE_SHARDS`), each on a Redis Cluster slot of its own. */
  readonly stepQueues: readonly Queue<StepJobData>[];
  /** The shard a run's step jobs go to. */
  stepQueueFor(runId: RunId): Queue<StepJobData>;
  /** The tool-batch queue of this process's own host. */
  readonly toolQueue: Queue<ToolBatchJobData>;
  /** A host's tool-batch queue (opened once, kept). */
  toolQueueOf(hostId: string): Queue<ToolBatchJobData>;
  dispatch(requests: readonly DispatchRequest[]): Promise<void>;
  /** BullMQ's view of the job a request maps to ("waiting", "prioritized", "active", "completed", "unknown", ...) and the worker processing it (`processedBy`, the worker's id), if any. */
  jobHolder(request: Omit<DispatchRequest, "tenantId">): Promise<{ state: string; processedBy: string | null }>;
  close(): Promise<void>;
}

export function createDispatcher(options: {
  connection: RedisConnection;
  prefix: string;
  stepAttempts: number;
  /** Step queue shards, at least 1. */
  stepShards: number;
  /** This process's host: `toolQueue`. */
  hostId: string;
  /** Batches go to the queue of their project's host. */
  place: PlaceRun;
  load?: TenantLoad;
  /** The active trace as a `traceparent`, carried in job data so the job's spans continue it (SPEC X8). */
  traceCarrier?: () => string | undefined;
}): Dispatcher {
  const queueOptions = { connection: options.connection, prefix: options.prefix };
  const stepQueues = stepQueueNames(options.stepShards).map((name) => new Queue<StepJobData>(name, queueOptions));
  // Connection errors are the shared connection's, logged by its own listener (src/services.ts);
  // a queue without a listener would print each one to stderr as well.
  for (const queue of stepQueues) queue.on("error", () => {});
  const toolQueues = new Map<string, Queue<ToolBatchJobData>>();
  const toolQueueOf = (hostId: string) => {
    let queue = toolQueues.get(hostId);
    if (!queue) {
      queue = new Queue<ToolBatchJobData>(hostToolQueueName(hostId), queueOptions);
      queue.on("error", () => {});
      toolQueues.set(hostId, queue);
    }
    return queue;
  };
  const toolQueue = toolQueueOf(options.hostId);
  // Finished jobs are kept for a while so that a duplicate enqueue of the same work is
  // refused by BullMQ itself; the handlers are idempotent against Postgres beyond that window.
  const common: JobsOptions = {
    removeOnComplete: { count: 2000 },
    removeOnFail: { count: 5000 },
    // Jittered, so the steps one provider failure (a 5xx, a lost connection) failed together do not all come back together (PR3).
    backoff: { type: "exponential", delay: 250, jitter: 0.5 },
  };
  const stepQueueFor = (runId: RunId) => stepQueues[stepShardOf(runId, stepQueues.length)] as Queue<StepJobData>;

  const withOptions = (request: DispatchRequest, jobId: string): JobsOptions => {
    const attempts = request.next.kind === "step" ? options.stepAttempts : 3;
    // Every job gets a priority (BullMQ serves jobs without one first, so all or none).
    const priority = options.load?.priority(request.tenantId);
    return { ...common, jobId, attempts, ...(priority === undefined ? {} : { priority }) };
  };

  const dispatchOne = async (request: DispatchRequest) => {
    const trace = options.traceCarrier?.();
    const data = {
      runId: request.runId,
      stepIndex: request.next.stepIndex,
      ...(trace ? { trace } : {}),
    };
    if (request.next.kind === "step") {
      const jobId = jobIdFor(request.runId, request.next, request.redispatches);
      await stepQueueFor(request.runId).add("step", data, withOptions(request, jobId));
      return;
    }
    // No live host: the run keeps its outbox entry and the sweeper enqueues it once one is back.
    const placement = request.placement?.hostId === options.hostId ? request.placement : await options.place(request.runId);
    if (!placement) return;
    const batch: ToolBatchJobData = {
      ...data,
      ...(request.next.resume !== undefined ? { resume: request.next.resume } : {}),
      placement,
    };
    const jobId = jobIdFor(request.runId, request.next, request.redispatches, placement.epoch);
    await toolQueueOf(placement.hostId).add("batch", batch, withOptions(request, jobId));
  };

  return {
    stepQueues,
    stepQueueFor,
    toolQueue,
    toolQueueOf,
    async dispatch(requests) {
      await Promise.all(requests.map(dispatchOne));
    },
    async jobHolder(request) {
      let job;
      if (request.next.kind === "step")
        job = await stepQueueFor(request.runId).getJob(jobIdFor(request.runId, request.next, request.redispatches));
      else {
        // Looked for where its project is placed now: a job left on a host it moved away from is lost work.
        const placement = await options.place(request.runId);
        if (!placement) return { state: "unknown", processedBy: null };
        job = await toolQueueOf(placement.hostId).getJob(jobIdFor(request.runId, request.next, request.redispatches, placement.epoch));
      }
      if (!job) return { state: "unknown", processedBy: null };
      return { state: await job.getState(), processedBy: job.processedBy ?? null };
    },
    async close() {
      await Promise.all([...stepQueues, ...toolQueues.values()].map((queue) => queue.close()));
    },
  };
}
