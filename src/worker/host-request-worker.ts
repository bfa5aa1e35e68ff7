import { Worker, type Job } from "bullmq";
import {
  type HostReply,
  type HostRequestJobData,
  hostReplyKeyName,
  maxHostReplyBytes,
  parseHostRequestJob,
} from "../hosts/host-request.js";
import { createRedisConnection } from "../net/redis-connection.js";
import { hostRequestQueueName } from "../queue/job-types.js";
import { createWorkerReplies, type WorkerReplies } from "../queue/worker-replies.js";
import type { JobDeps } from "./job-deps.js";
import { serveHostRequest, type ServeHostRequestDeps } from "./serve-host-request.js";

export interface HostRequestWorker {
  /** Stops taking requests, lets running ones finish for up to the shutdown grace, then aborts them. */
  close(): Promise<void>;
}

/** The shortest lock a worker holds on a request it serves: a revert of many files may take a while. */
const hostRequestLockFloorMs = 15_000;

/** A reply outlives the API's deadline by this much: the API reads it once more at the deadline. */
const replyGraceMs = 10_000;

type HostRequestServices = ServeHostRequestDeps & Pick<JobDeps, "redis" | "bus">;

/**
 * The host's side of the API's requests on its projects' workspaces (src/hosts/host-request.ts):
 * every worker of the host takes them from the host's own queue, beside its tool batches.
 */
export async function startHostRequestWorker(services: HostRequestServices, hostId: string): Promise<HostRequestWorker> {
  const { config, logger } = services;
  const replies = createWorkerReplies({
    redis: services.redis,
    bus: services.bus,
    prefix: config.redis.queuePrefix,
    keyName: hostReplyKeyName,
    maxBytes: maxHostReplyBytes,
    tooLarge: (bytes): HostReply<never> => ({
      ok: false,
      code: "failed",
      message: `The host's answer is ${bytes} bytes, too large to pass on.`,
    }),
  });
  const shutdown = new AbortController();
  const connection = createRedisConnection(config.redis);
  connection.on("error", (error) => logger.warn({ err: error }, "host request worker redis error"));
  const worker = new Worker<HostRequestJobData>(
    hostRequestQueueName(hostId),
    (job) => processHostRequestJob({ services, replies, hostId, shutdown: shutdown.signal }, job),
    {
      connection,
      prefix: config.redis.queuePrefix,
      concurrency: config.workers.hostRequestConcurrency,
      lockDuration: Math.max(config.workers.leaseMs, hostRequestLockFloorMs),
      stalledInterval: config.workers.stalledIntervalMs,
    },
  );
  worker.on("failed", (job, error) => logger.warn({ err: error, jobId: job?.id }, "host request job failed"));
  worker.on("error", (error) => logger.warn({ err: error }, "host request worker error"));
  await worker.waitUntilReady();

  return {
    async close() {
      const timedOut = await Promise.race([
        worker.close().then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), config.workers.shutdownGraceMs).unref()),
      ]);
      if (timedOut) {
        shutdown.abort();
        await worker.close(true);
      }
      connection.disconnect();
    },
  };
}

interface HostRequestJobContext {
  services: HostRequestServices;
  replies: WorkerReplies;
  hostId: string;
  shutdown: AbortSignal;
}

/** One request: dropped when malformed or once the API stopped waiting; every other outcome is a reply. */
async function processHostRequestJob(context: HostRequestJobContext, job: Job<HostRequestJobData>): Promise<void> {
  const { services } = context;
  const parsed = parseHostRequestJob(job.data);
  if (!parsed.ok) {
    services.logger.warn({ jobId: job.id, issues: parsed.issues }, "malformed host request job dropped");
    return;
  }
  const data = parsed.data;
  const left = data.deadline - Date.now();
  if (left <= 0) return;
  const signal = AbortSignal.any([AbortSignal.timeout(left), context.shutdown]);
  const jobId = job.id as string;
  const reply = await serveHostRequest(services, { hostId: context.hostId, jobId }, data, signal);
  await context.replies.deliver(data.replyTo, jobId, reply, data.deadline - Date.now() + replyGraceMs);
}
