import { randomBytes } from "node:crypto";
import { Worker } from "bullmq";
import { createRedisConnection, type RedisConnection } from "../net/redis-connection.js";
import {
  hostToolQueueName,
  stepQueueName,
  stepQueueNames,
  toolQueueName,
  type StepJobData,
  type ToolBatchJobData,
} from "../queue/job-types.js";
import type { Services } from "../services.js";
import { hostIdOf } from "../config.js";
import { prepareHostRoot } from "../workspace/project-workspace.js";
import { removeSetAside } from "../workspace/host-copies.js";
import { startWebhookDelivery } from "../webhooks/webhook-runtime.js";
import { describeConfinement } from "../sandbox/confinement-report.js";
import { startMcpRequestWorker } from "./mcp-request-worker.js";
import { startHostRequestWorker } from "./host-request-worker.js";
import type { JobContext } from "./job-context.js";
import { startLeaseKeeper } from "./lease-keeper.js";
import { createRunAborts } from "./run-aborts.js";
import { createSessionContextCache } from "./session-context-cache.js";
import { startBackgroundCommands } from "./background-commands.js";
import { rollForwardLayers } from "./roll-forward-layers.js";
import { startSweeper } from "./sweeper.js";
import { startProjectRemoval } from "./project-removal.js";
import { startHostEviction } from "./host-eviction.js";
import { processStepJob } from "./step/process.js";
import { processToolBatchJob } from "./tool-batch/process.js";
import { createHistoryCache } from "./step/history-cache.js";
import { startLiveness, type Liveness } from "./liveness.js";
import { observeJob, type JobTelemetry } from "./job-telemetry.js";
import { removeStaleWrites } from "../workspace/project-workspace.js";

export interface WorkerRuntime {
  readonly workerId: string;
  /** Stops taking jobs, lets running ones finish for up to the shutdown grace, then lets go. */
  close(): Promise<void>;
}

/** A worker process's composition root: its bookkeeping, its two job workers and what runs beside them. */
export async function startWorkerRuntime(services: Services): Promise<WorkerRuntime> {
  const { config, logger } = services;
  const host = hostIdOf(config);
  await prepareHostRoot(config.workspaces.dir);
  // Copies a killed process was removing when it died; off the start-up path, like any removal.
  void removeSetAside(config.workspaces.dir).catch((error: unknown) => logger.warn({ err: error }, "removing set-aside copies failed"));
  const workerId = `${host}-${process.pid}-${randomBytes(3).toString("hex")}`;
  const context: JobContext = {
    deps: services,
    workerId,
    hostId: host,
    leases: startLeaseKeeper(services.store, config.workers.leaseMs, (error) => logger.warn({ err: error }, "lease renewal failed")),
    aborts: createRunAborts(),
    sessionContexts: createSessionContextCache(services.store),
    histories: createHistoryCache(),
    commands: startBackgroundCommands({
      store: services.store,
      workerId,
      leaseMs: config.workers.leaseMs,
      onError: (error) => logger.warn({ err: error }, "background command bookkeeping failed"),
    }),
  };
  // Jobs running per queue, for the liveness record and GET /v1/admin/workers.
  const running = { [stepQueueName]: 0, [toolQueueName]: 0 };
  const liveness = await startLiveness({
    databaseUrl: config.database.url,
    worker: { id: workerId, host, pid: process.pid },
    intervalMs: config.workers.livenessIntervalMs,
    holdings: () => ({ jobs: { ...running }, commands: context.commands.count() }),
    onWarning: (message, error) => logger.warn({ workerId, ...(error ? { err: error } : {}) }, message),
  });
  const stopListeners = await listenForStops(services, context);
  const jobs = await startJobWorkers(services, context, running);
  const beside = await startBesideJobs(services, { workerId, hostId: host, liveness });
  return {
    workerId,
    async close() {
      const besideClosed = beside.close();
      stopListeners();
      const timedOut = await jobs.close();
      // Background commands live as long as their worker: a drained worker ends them, truthfully recorded.
      await context.commands.stop();
      await besideClosed;
      context.leases.stop();
      // Drained: nothing of this worker is left to take over. Handed back: the record goes stale and the sweepers take over at once.
      await liveness.stop({ drained: !timedOut });
      jobs.disconnect();
    },
  };
}

/** Cancels, background commands' cancels and deleted MCP servers, broadcast to every worker. */
async function listenForStops(services: Services, context: JobContext): Promise<() => void> {
  const { aborts, commands } = context;
  const stopCancelListener = await services.bus.onCancel((runId) => aborts.abort(runId, "run cancelled"));
  const stopCommandListener = await services.bus.onCommandCancel((commandId) => void commands.cancel(commandId));
  // A deleted server's configuration: whichever workers run it stop it.
  const stopMcpServerListener = await services.bus.onMcpServerStop(
    (server) => void services.mcp.disconnect({ tenantId: server.tenantId, projectId: server.projectId }, server.name),
  );
  return () => {
    stopCancelListener();
    stopCommandListener();
    stopMcpServerListener();
  };
}

interface JobWorkers {
  /** Drains under the shutdown grace, then hands running jobs back; answers whether the grace ran out. */
  close(): Promise<boolean>;
  disconnect(): void;
}

/**
 * The step and tool-batch workers, each kind on a connection of its own. One step worker per
 * step queue shard, all on one connection (each holds its own blocking connection beside it),
 * each with its share of `FOYA_STEP_CONCURRENCY` (rounded up).
 */
async function startJobWorkers(services: Services, context: JobContext, running: Record<string, number>): Promise<JobWorkers> {
  const { config, logger } = services;
  const telemetry: JobTelemetry = {
    logger,
    metrics: services.metrics,
    tracing: services.tracing,
    workerId: context.workerId,
    scopeOf: (runId) => context.sessionContexts.scopeOfRun(runId),
  };
  const counted = <T>(queue: string, work: () => Promise<T>): Promise<T> => {
    running[queue] = (running[queue] ?? 0) + 1;
    return work().finally(() => {
      running[queue] = (running[queue] ?? 0) - 1;
    });
  };
  const connections: RedisConnection[] = [];
  const newConnection = () => {
    const connection = createRedisConnection(config.redis);
    connection.on("error", (error) => logger.warn({ err: error }, "worker redis error"));
    connections.push(connection);
    return connection;
  };
  const workerOptions = (concurrency: number, connection: RedisConnection) => ({
    connection,
    // BullMQ records it on each job it takes (processedBy): the sweeper can tell a job held by a dead worker.
    name: context.workerId,
    prefix: config.redis.queuePrefix,
    concurrency,
    lockDuration: config.workers.leaseMs,
    stalledInterval: config.workers.stalledIntervalMs,
    // Handlers are idempotent against Postgres, so a job may stall and come back often.
    maxStalledCount: 10,
  });
  const stepShards = stepQueueNames(config.redis.stepQueueShards);
  const stepConnection = newConnection();
  const stepWorkers = stepShards.map(
    (name) =>
      new Worker<StepJobData>(
        name,
        (job, token) => counted(stepQueueName, () => observeJob(telemetry, stepQueueName, job, () => processStepJob(context, job, token))),
        workerOptions(Math.ceil(config.workers.stepConcurrency / stepShards.length), stepConnection),
      ),
  );
  // This host's queue only: a project's batches run where its workspace is (SPEC W3).
  const toolWorker = new Worker<ToolBatchJobData>(
    hostToolQueueName(context.hostId),
    (job, token) => counted(toolQueueName, () => observeJob(telemetry, toolQueueName, job, () => processToolBatchJob(context, job, token))),
    workerOptions(config.workers.toolConcurrency, newConnection()),
  );
  // A job's own failures are logged by observeJob, with its ids; these are the worker's.
  const workers = [...stepWorkers, toolWorker];
  for (const worker of workers) worker.on("error", (error) => logger.warn({ err: error }, "worker error"));
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  return {
    close: () => drainWorkers(services, context, workers),
    disconnect: () => {
      for (const connection of connections) connection.disconnect();
    },
  };
}

async function drainWorkers(services: Services, context: JobContext, workers: readonly Worker[]): Promise<boolean> {
  const graceful = Promise.all(workers.map((worker) => worker.close()));
  const timedOut = await Promise.race([
    graceful.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(true), services.config.workers.shutdownGraceMs).unref()),
  ]);
  if (timedOut) {
    // Jobs still running are handed back: their leases lapse and another worker takes them.
    services.logger.warn("shutdown grace elapsed; handing back running jobs");
    context.aborts.abortAll("worker shutting down");
    await Promise.all(workers.map((worker) => worker.close(true)));
  }
  return timedOut;
}

/** What runs beside the jobs: layer roll-forward, the sweeper, project removal, eviction, webhooks, MCP requests and the host's requests. */
async function startBesideJobs(
  services: Services,
  self: { workerId: string; hostId: string; liveness: Liveness },
): Promise<{ close(): Promise<void> }> {
  const { logger } = services;
  if (!services.callLayers.ok)
    logger.warn({ reason: services.callLayers.reason }, "what shell commands change is not recorded on this worker (SPEC X7)");
  // Off the start-up path: a large layer must not hold back the sweeper that recovers the dead worker's runs.
  void rollForwardLayers(services).catch((error: unknown) =>
    logger.error({ err: error }, "rolling forward interrupted commands' layers failed"),
  );
  void removeStaleWrites(services.config.workspaces.dir).then(
    (removed) => removed > 0 && logger.info({ removed }, "files of door writes cut short by a crash removed from the staging folder"),
    (error: unknown) => logger.warn({ err: error }, "removing door writes cut short by a crash failed"),
  );
  const sweeper = startSweeper(services, self);
  // Beside the sweeper, not in it: a large tree takes seconds to remove and must not hold back recovery.
  const projectRemoval = startProjectRemoval(services, self);
  // Idle projects' copies over this host's disk budget go; their checkpoints bring them back (W3).
  const eviction = startHostEviction(services, self);
  const webhooks = await startWebhookDelivery(services);
  // MCP listings, resources and prompts the API asks for: the API process starts no server.
  const mcpRequests = await startMcpRequestWorker(services, self.hostId);
  // What the API does on this host's workspaces (SPEC W3): the API process touches none.
  const hostRequests = await startHostRequestWorker(services, self.hostId);
  // Only workers confine processes, so this is where an operator learns how (an API-only /readyz does not say).
  logger.info({ workerId: self.workerId, confinement: describeConfinement(services.config, services.identityMode) }, "worker started");
  return {
    async close() {
      sweeper.stop();
      // Drain in parallel with the step and tool workers, under the same grace.
      await Promise.all([projectRemoval.stop(), eviction.stop(), webhooks.close(), mcpRequests.close(), hostRequests.close()]);
    },
  };
}
