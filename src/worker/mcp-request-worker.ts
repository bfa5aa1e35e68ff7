import { DelayedError, Worker, type Job } from "bullmq";
import { createRedisConnection } from "../net/redis-connection.js";
import { createMcpReplies, type McpReplies, type McpReply } from "../mcp/mcp-replies.js";
import { hostMcpRequestQueueName, mcpRequestJobDataSchema, mcpRequestQueueName, type McpRequestJobData } from "../mcp/mcp-request.js";
import { serveMcpRequest } from "../mcp/serve-mcp-request.js";
import { movedReply } from "../queue/worker-replies.js";
import { type HostWorkspaceDeps, isPlacedHere, prepareHostWorkspace } from "./host-workspace.js";
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

type McpRequestServices = Pick<JobDeps, "config" | "store" | "redis" | "bus" | "logger" | "mcp"> & HostWorkspaceDeps;

/**
 * The worker side of the API's MCP requests (src/mcp/mcp-request.ts): every worker serves them with
 * its own connections, from the shared queue (tenant-wide servers) and from its host's queue (the
 * servers of the projects placed on this host, which run in their workspaces, SPEC W3). Each
 * queue has `FOYA_MCP_REQUEST_CONCURRENCY` slots; a tenant's share counts both.
 */
export async function startMcpRequestWorker(services: McpRequestServices, hostId: string): Promise<McpRequestWorker> {
  const { config, logger } = services;
  const replies = createMcpReplies({ redis: services.redis, bus: services.bus, prefix: config.redis.queuePrefix });
  const shutdown = new AbortController();
  const context: McpRequestJobContext = {
    services,
    replies,
    shares: tenantShares(config.mcp.requestTenantConcurrency),
    shutdown: shutdown.signal,
    hostId,
  };
  const connection = createRedisConnection(config.redis);
  connection.on("error", (error) => logger.warn({ err: error }, "MCP request worker redis error"));
  const workers = [mcpRequestQueueName, hostMcpRequestQueueName(hostId)].map((queueName) => {
    const worker = new Worker<McpRequestJobData>(queueName, (job, token) => processMcpRequestJob(context, job, token), {
      connection,
      prefix: config.redis.queuePrefix,
      concurrency: config.mcp.requestConcurrency,
      // A lock that outlives a busy moment: with a short lease (tests use 2 s) a worker starved of CPU
      // lost a request it was serving, and the API answered no_worker. These requests are read-only and
      // the API answers at its own deadline whatever happens, so a dead worker's request needs no quick takeover.
      lockDuration: Math.max(config.workers.leaseMs, mcpRequestLockFloorMs),
      stalledInterval: config.workers.stalledIntervalMs,
    });
    worker.on("failed", (job, error) => logger.warn({ err: error, jobId: job?.id }, "MCP request job failed"));
    worker.on("error", (error) => logger.warn({ err: error }, "MCP request worker error"));
    return worker;
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));

  return {
    async close() {
      const timedOut = await Promise.race([
        Promise.all(workers.map((worker) => worker.close())).then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), config.workers.shutdownGraceMs).unref()),
      ]);
      if (timedOut) {
        shutdown.abort();
        await Promise.all(workers.map((worker) => worker.close(true)));
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
  /** This worker's host: a project's request is served only while the project is placed here. */
  hostId: string;
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
  let reply: McpReply;
  const deadline = AbortSignal.timeout(left);
  try {
    const ready = await projectWorkspaceReady(context, data, AbortSignal.any([deadline, context.shutdown]));
    if (ready !== "serve") {
      await replies.deliver(data.replyTo, job.id as string, ready, data.deadline - Date.now() + replyGraceMs);
      return;
    }
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

/**
 * A project's server runs in the project's workspace on this host (SPEC W3): the request is served
 * only while the project is placed here at the request's epoch (else `movedReply`), with the
 * host's copy claimed for that placement and its folder present. A tenant-wide server's request
 * needs none; nor does one whose project is not the tenant's live project: nothing is touched for
 * it, and the server's lookup by the request's tenant answers it (not configured).
 */
async function projectWorkspaceReady(
  context: McpRequestJobContext,
  data: McpRequestJobData,
  signal: AbortSignal,
): Promise<"serve" | McpReply> {
  if (!data.placement || data.projectId === null) return "serve";
  const placed = { tenantId: data.tenantId, projectId: data.projectId, epoch: data.placement.epoch };
  if (data.placement.hostId !== context.hostId || !(await isPlacedHere(context.services, context.hostId, placed))) return movedReply;
  if (!(await context.services.store.projects.findOwnedProject(data.tenantId, data.projectId))) return "serve";
  await prepareHostWorkspace(context.services, placed, signal);
  return "serve";
}
