import { Queue, type JobsOptions } from "bullmq";
import type { RedisConnection } from "../net/redis-connection.js";
import type { StepJobData, ToolBatchJobData } from "./job-types.js";
import { jobIdFor, queueName, stepQueueNames, stepShardOf, toolQueueName } from "./job-types.js";
import type { TenantLoad } from "./tenant-load.js";
import type { DispatchRequest, NextJob } from "../core/next-job.js";
import type { RunId } from "../ids.js";

export interface Dispatcher {
  /** The step queue's shards (`FOYA_STEP_QUEUE_SHARDS`), each on a Redis Cluster slot of its own. */
  readonly stepQueues: readonly Queue<StepJobData>[];
  /** The shard a run's step jobs go to. */
  stepQueueFor(runId: RunId): Queue<StepJobData>;
  readonly toolQueue: Queue<ToolBatchJobData>;
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
  load?: TenantLoad;
  /** The active trace as a `traceparent`, carried in job data so the job's spans continue it (SPEC X8). */
  traceCarrier?: () => string | undefined;
}): Dispatcher {
  const queueOptions = { connection: options.connection, prefix: options.prefix };
  const stepQueues = stepQueueNames(options.stepShards).map((name) => new Queue<StepJobData>(name, queueOptions));
  const toolQueue = new Queue<ToolBatchJobData>(queueName(toolQueueName), queueOptions);
  // Connection errors are the shared connection's, logged by its own listener (src/services.ts);
  // a queue without a listener would print each one to stderr as well.
  for (const queue of [...stepQueues, toolQueue]) queue.on("error", () => {});
  // Finished jobs are kept for a while so that a duplicate enqueue of the same work is
  // refused by BullMQ itself; the handlers are idempotent against Postgres beyond that window.
  const common: JobsOptions = {
    removeOnComplete: { count: 2000 },
    removeOnFail: { count: 5000 },
    backoff: { type: "exponential", delay: 250 },
  };

  const stepQueueFor = (runId: RunId) => stepQueues[stepShardOf(runId, stepQueues.length)] as Queue<StepJobData>;
  const queueFor = (runId: RunId, next: NextJob) => (next.kind === "step" ? stepQueueFor(runId) : toolQueue);

  return {
    stepQueues,
    stepQueueFor,
    toolQueue,
    async dispatch(requests) {
      await Promise.all(
        requests.map((request) => {
          const trace = options.traceCarrier?.();
          const data = {
            runId: request.runId,
            stepIndex: request.next.stepIndex,
            ...(request.next.kind === "batch" && request.next.resume !== undefined ? { resume: request.next.resume } : {}),
            ...(trace ? { trace } : {}),
          };
          const jobId = jobIdFor(request.runId, request.next, request.redispatches);
          const attempts = request.next.kind === "step" ? options.stepAttempts : 3;
          // Every job gets a priority (BullMQ serves jobs without one first, so all or none).
          const priority = options.load?.priority(request.tenantId);
          const jobOptions = { ...common, jobId, attempts, ...(priority === undefined ? {} : { priority }) };
          return request.next.kind === "step"
            ? stepQueueFor(request.runId).add("step", data, jobOptions)
            : toolQueue.add("batch", data, jobOptions);
        }),
      );
    },
    async jobHolder(request) {
      const job = await queueFor(request.runId, request.next).getJob(jobIdFor(request.runId, request.next, request.redispatches));
      if (!job) return { state: "unknown", processedBy: null };
      return { state: await job.getState(), processedBy: job.processedBy ?? null };
    },
    async close() {
      await Promise.all([...stepQueues, toolQueue].map((queue) => queue.close()));
    },
  };
}
