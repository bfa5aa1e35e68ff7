import { Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { McpOutcome } from "../mcp/mcp-connections.js";
import { createMcpReplies, type McpReplies } from "../mcp/mcp-replies.js";
import { mcpRequestJobDataSchema, mcpRequestQueueName, type McpRequestJobData } from "../mcp/mcp-request.js";
import { serveMcpRequest } from "../mcp/serve-mcp-request.js";
import type { Services } from "../services.js";

export interface McpRequestWorker {
  /** Stops taking requests, lets running ones finish for up to the shutdown grace, then aborts them. */
  close(): Promise<void>;
}

/** The shortest lock a worker holds on an MCP request it serves. */
const mcpRequestLockFloorMs = 15_000;

/** A reply outlives the API's deadline by this much: the API reads it once more at the deadline. */
const replyGraceMs = 10_000;

type McpRequestServices = Pick<Services, "config" | "db" | "redis" | "bus" | "logger" | "mcp">;

/** The worker side of the API's MCP requests (src/mcp/mcp-request.ts): every worker serves them with its own connections. */
export async function startMcpRequestWorker(services: McpRequestServices): Promise<McpRequestWorker> {
  const { config, logger } = services;
  const replies = createMcpReplies({ redis: services.redis, bus: services.bus, prefix: config.redis.queuePrefix });
  const shutdown = new AbortController();
  const connection = new Redis(config.redis.url, { maxRetriesPerRequest: null });
  connection.on("error", (error) => logger.warn({ err: error }, "MCP request worker redis error"));
  const worker = new Worker<McpRequestJobData>(
    mcpRequestQueueName,
    (job) => processMcpRequestJob({ services, replies, shutdown: shutdown.signal }, job),
    {
      connection,
      prefix: config.redis.queuePrefix,
      concurrency: config.mcp.requestConcurrency,
      // A lock that outlives a busy moment: with a short lease (tests use 2 s) a worker starved of CPU
      // lost a request it was serving, and the API answered no_worker. These requests are read-only and
      // the API answers at its own deadline whatever happens, so a dead worker's request needs no quick takeover.
      lockDuration: Math.max(config.workers.leaseMs, mcpRequestLockFloorMs),
      stalledInterval: config.workers.stalledIntervalMs,
    },
  );
  worker.on("failed", (job, error) => logger.warn({ err: error, jobId: job?.id }, "MCP request job failed"));
  worker.on("error", (error) => logger.warn({ err: error }, "MCP request worker error"));
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

interface McpRequestJobContext {
  services: McpRequestServices;
  replies: McpReplies;
  shutdown: AbortSignal;
}

/** One request: dropped once the API stopped waiting; any failure is a reply, so the API never waits out its deadline for nothing. */
async function processMcpRequestJob(context: McpRequestJobContext, job: Job<McpRequestJobData>): Promise<void> {
  const { services, replies } = context;
  const parsed = mcpRequestJobDataSchema.safeParse(job.data);
  if (!parsed.success) {
    services.logger.warn({ jobId: job.id, issues: parsed.error.issues }, "malformed MCP request job dropped");
    return;
  }
  const data = parsed.data;
  const left = data.deadline - Date.now();
  if (left <= 0) return;
  let reply: McpOutcome<unknown>;
  const deadline = AbortSignal.timeout(left);
  try {
    reply = await serveMcpRequest({ db: services.db.db, mcp: services.mcp }, data, AbortSignal.any([deadline, context.shutdown]));
    // Cancelled here means this worker gave up, not the client: say which.
    if (!reply.ok && reply.errorCode === "cancelled") {
      reply = deadline.aborted
        ? { ok: false, errorCode: "mcp_timeout", message: `The MCP server "${data.server}" did not answer within the API's deadline.` }
        : { ok: false, errorCode: "mcp_unavailable", message: `The worker serving the MCP server "${data.server}" shut down; try again.` };
    }
  } catch (error) {
    services.logger.error({ err: error, jobId: job.id, tenantId: data.tenantId, mcpServer: data.server }, "MCP request failed");
    reply = {
      ok: false,
      errorCode: "mcp_unavailable",
      message: `A worker could not serve the request for the MCP server "${data.server}"; the operator finds why in its log (job ${job.id}).`,
    };
  }
  await replies.deliver(data.replyTo, job.id as string, reply, data.deadline - Date.now() + replyGraceMs);
}
