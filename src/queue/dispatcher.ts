import { Queue, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import type { StepJobData, ToolBatchJobData } from "./job-types.js";
import { jobIdFor, stepQueueName, toolQueueName } from "./job-types.js";
import type { TenantLoad } from "./tenant-load.js";
import type { DispatchRequest, NextJob } from "../core/next-job.js";

export interface Dispatcher {
  readonly stepQueue: Queue<StepJobData>;
  readonly toolQueue: Queue<ToolBatchJobData>;
  dispatch(requests: readonly DispatchRequest[]): Promise<void>;
  /** BullMQ's view of the job a request maps to ("waiting", "prioritized", "active", "completed", "unknown", ...) and the worker processing it (`processedBy`, the worker's id), if any. */
  jobHolder(request: Omit<DispatchRequest, "tenantId">): Promise<{ state: string; processedBy: string | null }>;
  close(): Promise<void>;
}

export function createDispatcher(options: {
  connection: Redis;
  prefix: string;
  stepAttempts: number;
  load?: TenantLoad;
  /** The active trace as a `traceparent`, carried in job data so the job's spans continue it (SPEC X8). */
  traceCarrier?: () => string | undefined;
}): Dispatcher {
  const queueOptions = { connection: options.connection, prefix: options.prefix };
  const stepQueue = new Queue<StepJobData>(stepQueueName, queueOptions);
  const toolQueue = new Queue<ToolBatchJobData>(toolQueueName, queueOptions);
  // Connection errors are the shared connection's, logged by its own listener (src/services.ts);
  // a queue without a listener would print each one to stderr as well.
  for (const queue of [stepQueue, toolQueue]) queue.on("error", () => {});
  // Finished jobs are kept for a while so that a duplicate enqueue of the same work is
  // refused by BullMQ itself; the handlers are idempotent against Postgres beyond that window.
  const common: JobsOptions = {
    removeOnComplete: { count: 2000 },
    removeOnFail: { count: 5000 },
    backoff: { type: "exponential", delay: 250 },
  };

  const queueFor = (next: NextJob) => (next.kind === "step" ? stepQueue : toolQueue);

  return {
    stepQueue,
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
          return request.next.kind === "step" ? stepQueue.add("step", data, jobOptions) : toolQueue.add("batch", data, jobOptions);
        }),
      );
    },
    async jobHolder(request) {
      const job = await queueFor(request.next).getJob(jobIdFor(request.runId, request.next, request.redispatches));
      if (!job) return { state: "unknown", processedBy: null };
      return { state: await job.getState(), processedBy: job.processedBy ?? null };
    },
    async close() {
      await Promise.all([stepQueue.close(), toolQueue.close()]);
    },
  };
}
