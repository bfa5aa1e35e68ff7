import { DelayedError, Worker, type Job } from "bullmq";
import { createRedisConnection } from "../net/redis-connection.js";
import type { McpOutcome } from "../mcp/mcp-connections.js";
import { createMcpReplies, type McpReplies } from "../mcp/mcp-replies.js";
import { mcpRequestJobDataSchema, mcpRequestQueueName, type McpRequestJobData } from "../mcp/mcp-request.js";
import { serveMcpRequest } from "../mcp/serve-mcp-request.js";
import type { JobDeps } from "./job-deps.js";
import type { TenantId } from "../ids.js";

export interface McpRequestWorker {
  /** Stops taking requests, lets running ones finish for up to the shutdown grace, then aborts them. */
  close(): Promise<void>;
}

/** The shortest lock a worker holds on an MCP request it serves. */
const mcpRequestLockFloorMs = 15_000;

/** A reply outlives the API's deadline by this much: the API reads it once more at the deadline. */
const replyGraceMs = 10_000;

/** A request of a tenant at its share waits about this long (jittered) before it is taken again. */
const heldBackMs = 200;

type McpRequestServices = Pick<JobDeps, "config" | "store" | "redis" | "bus" | "logger" | "mcp">;

/** The worker side of the API's MCP requests (src/mcp/mcp-request.ts): every worker serves them with its own connections. */
export async function startMcpRequestWorker(services: McpRequestServices): Promise<McpRequestWorker> {
  const { config, logger } = services;
  const replies = createMcpReplies({ redis: services.redis, bus: services.bus, prefix: config.redis.queuePrefix });
  const shutdown = new AbortController();
  const shares = tenantShares(config.mcp.requestTenantConcurrency);
  const connection = createRedisConnection(config.redis);
  connection.on("error", (error) => logger.warn({ err: error }, "MCP request worker redis error"));
  const worker = new Worker<McpRequestJobData>(
    mcpRequestQueueName,
    (job, token) => processMcpRequestJob({ services, replies, shares, shutdown: shutdown.signal }, job, token),
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
  shares: TenantShares;
  shutdown: AbortSignal;
}

/**
 * Each tenant's share of this worker's request slots (`FOYA_MCP_REQUEST_TENANT_CONCURRENCY`): a
 * tenant whose requests fill its share gets no further slot until one of them ends, so one
 * tenant's slow server never holds every slot and another tenant's request still finds one.
 */
interface TenantShares {
  /** Whether the tenant had a free place in its share, now taken. */
  take(tenantId: TenantId): boolean;
  release(tenantId: TenantId): void;
}

function tenantShares(perTenant: number): TenantShares {
  const serving = new Map<string, number>();
  return {
    take(tenantId) {
      const count = serving.get(tenantId) ?? 0;
      if (count >= perTenant) return false;
      serving.set(tenantId, count + 1);
      return true;
    },
    release(tenantId) {
      const count = (serving.get(tenantId) ?? 1) - 1;
      if (count > 0) serving.set(tenantId, count);
      else serving.delete(tenantId);
    },
  };
}

/**
 * One request: dropped once the API stopped waiting; held back (delayed, holding no slot) while
 * its tenant's share is full; any failure is a reply, so the API never waits out its deadline for nothing.
 */
async function processMcpRequestJob(context: McpRequestJobContext, job: Job<McpRequestJobData>, token: string | undefined): Promise<void> {
  const { services } = context;
  const parsed = mcpRequestJobDataSchema.safeParse(job.data);
  if (!parsed.success) {
    services.logger.warn({ jobId: job.id, issues: parsed.error.issues }, "malformed MCP request job dropped");
    return;
  }
  const data = parsed.data;
  const left = data.deadline - Date.now();
  if (left <= 0) return;
  if (!context.shares.take(data.tenantId)) {
    // Back to the queue, behind the other tenants' requests; the API sees it was held back (`job.delay`).
    await job.moveToDelayed(Date.now() + heldBackMs / 2 + Math.random() * heldBackMs, token);
    throw new DelayedError();
  }
  try {
    await serveMcpRequestJob(context, job, data, left);
  } finally {
    context.shares.release(data.tenantId);
  }
}

/** Asks this worker's connection and delivers the reply. */
async function serveMcpRequestJob(
  context: McpRequestJobContext,
  job: Job<McpRequestJobData>,
  data: McpRequestJobData,
  left: number,
): Promise<void> {
  const { services, replies } = context;
  let reply: McpOutcome<unknown>;
  const deadline = AbortSignal.timeout(left);
  try {
    reply = await serveMcpRequest({ store: services.store, mcp: services.mcp }, data, AbortSignal.any([deadline, context.shutdown]));
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
