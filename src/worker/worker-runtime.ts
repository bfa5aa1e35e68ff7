import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { stepQueueName, toolQueueName, type StepJobData, type ToolBatchJobData } from "../queue/job-types.js";
import type { Services } from "../services.js";
import { startWebhookDelivery } from "../webhooks/webhook-runtime.js";
import { describeConfinement } from "../sandbox/confinement-report.js";
import { startMcpRequestWorker } from "./mcp-request-worker.js";
import type { JobContext } from "./job-context.js";
import { startLeaseKeeper } from "./lease-keeper.js";
import { createRunAborts } from "./run-aborts.js";
import { createSessionContextCache } from "./session-context-cache.js";
import { startBackgroundCommands } from "./background-commands.js";
import { rollForwardLayers } from "./roll-forward-layers.js";
import { startSweeper } from "./sweeper.js";
import { startProjectRemoval } from "./project-removal.js";
import { processStepJob } from "./step-job.js";
import { processToolBatchJob } from "./tool-batch-job.js";
import { createHistoryCache } from "./history-cache.js";
import { startLiveness } from "./liveness.js";
import { observeJob, type JobTelemetry } from "./job-telemetry.js";

export interface WorkerRuntime {
  readonly workerId: string;
  /** Stops taking jobs, lets running ones finish for up to the shutdown grace, then lets go. */
  close(): Promise<void>;
}

export async function startWorkerRuntime(services: Services): Promise<WorkerRuntime> {
  const { config, logger } = services;
  const host = hostname();
  const workerId = `${host}-${process.pid}-${randomBytes(3).toString("hex")}`;
  const leases = startLeaseKeeper(services.db.pool, config.workers.leaseMs, (error) => logger.warn({ err: error }, "lease renewal failed"));
  const aborts = createRunAborts();
  const commands = startBackgroundCommands({
    db: services.db.db,
    workerId,
    leaseMs: config.workers.leaseMs,
    onError: (error) => logger.warn({ err: error }, "background command bookkeeping failed"),
  });
  // Jobs running per queue, for the liveness record and GET /v1/admin/workers.
  const running = { [stepQueueName]: 0, [toolQueueName]: 0 };
  const counted = <T>(queue: keyof typeof running, work: () => Promise<T>): Promise<T> => {
    running[queue]++;
    return work().finally(() => {
      running[queue]--;
    });
  };
  const liveness = await startLiveness({
    databaseUrl: config.database.url,
    worker: { id: workerId, host, pid: process.pid },
    intervalMs: config.workers.livenessIntervalMs,
    holdings: () => ({ jobs: { ...running }, commands: commands.count() }),
    onWarning: (message, error) => logger.warn({ workerId, ...(error ? { err: error } : {}) }, message),
  });
  const context: JobContext = {
    services,
    workerId,
    leases,
    aborts,
    sessionContexts: createSessionContextCache(),
    histories: createHistoryCache(),
    commands,
  };
  const telemetry: JobTelemetry = {
    logger,
    metrics: services.metrics,
    tracing: services.tracing,
    workerId,
    scopeOf: (runId) => context.sessionContexts.scopeOfRun(services.db.db, runId),
  };
  const stopCancelListener = await services.bus.onCancel((runId) => aborts.abort(runId, "run cancelled"));
  const stopCommandListener = await services.bus.onCommandCancel((commandId) => void commands.cancel(commandId));
  // A deleted server's configuration: whichever workers run it stop it.
  const stopMcpServerListener = await services.bus.onMcpServerStop(
    (server) => void services.mcp.disconnect({ tenantId: server.tenantId, projectId: server.projectId }, server.name),
  );

  const connections: Redis[] = [];
  const workerOptions = (concurrency: number) => {
    const connection = new Redis(config.redis.url, { maxRetriesPerRequest: null });
    connection.on("error", (error) => logger.warn({ err: error }, "worker redis error"));
    connections.push(connection);
    return {
      connection,
      // BullMQ records it on each job it takes (processedBy): the sweeper can tell a job held by a dead worker.
      name: workerId,
      prefix: config.redis.queuePrefix,
      concurrency,
      lockDuration: config.workers.leaseMs,
      stalledInterval: config.workers.stalledIntervalMs,
      // Handlers are idempotent against Postgres, so a job may stall and come back often.
      maxStalledCount: 10,
    };
  };
  const stepWorker = new Worker<StepJobData>(
    stepQueueName,
    (job, token) => counted(stepQueueName, () => observeJob(telemetry, stepQueueName, job, () => processStepJob(context, job, token))),
    workerOptions(config.workers.stepConcurrency),
  );
  const toolWorker = new Worker<ToolBatchJobData>(
    toolQueueName,
    (job, token) => counted(toolQueueName, () => observeJob(telemetry, toolQueueName, job, () => processToolBatchJob(context, job, token))),
    workerOptions(config.workers.toolConcurrency),
  );
  // A job's own failures are logged by observeJob, with its ids; these are the worker's.
  for (const worker of [stepWorker, toolWorker]) worker.on("error", (error) => logger.warn({ err: error }, "worker error"));
  await Promise.all([stepWorker.waitUntilReady(), toolWorker.waitUntilReady()]);
  if (!services.callLayers.ok)
    logger.warn({ reason: services.callLayers.reason }, "what shell commands change is not recorded on this worker (SPEC X7)");
  // Off the start-up path: a large layer must not hold back the sweeper that recovers the dead worker's runs.
  void rollForwardLayers(services).catch((error: unknown) =>
    logger.error({ err: error }, "rolling forward interrupted commands' layers failed"),
  );
  const sweeper = startSweeper(services, { workerId, liveness });
  // Beside the sweeper, not in it: a large tree takes seconds to remove and must not hold back recovery.
  const projectRemoval = startProjectRemoval(services, { workerId });
  const webhooks = await startWebhookDelivery(services);
  // MCP listings, resources and prompts the API asks for: the API process starts no server.
  const mcpRequests = await startMcpRequestWorker(services);
  // Only workers confine processes, so this is where an operator learns how (an API-only /readyz does not say).
  logger.info({ workerId, confinement: describeConfinement(config, services.identityMode) }, "worker started");

  return {
    workerId,
    async close() {
      sweeper.stop();
      const projectRemovalStopped = projectRemoval.stop();
      // Drains in parallel with the step and tool workers, under the same grace.
      const webhooksClosed = webhooks.close();
      const mcpRequestsClosed = mcpRequests.close();
      stopCancelListener();
      stopCommandListener();
      stopMcpServerListener();
      const graceful = Promise.all([stepWorker.close(), toolWorker.close()]);
      const timedOut = await Promise.race([
        graceful.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), config.workers.shutdownGraceMs).unref()),
      ]);
      if (timedOut) {
        // Jobs still running are handed back: their leases lapse and another worker takes them.
        logger.warn("shutdown grace elapsed; handing back running jobs");
        aborts.abortAll("worker shutting down");
        await Promise.all([stepWorker.close(true), toolWorker.close(true)]);
      }
      // Background commands live as long as their worker: a drained worker ends them, truthfully recorded.
      await commands.stop();
      await webhooksClosed;
      await mcpRequestsClosed;
      await projectRemovalStopped;
      leases.stop();
      // Drained: nothing of this worker is left to take over. Handed back: the record goes stale and the sweepers take over at once.
      await liveness.stop({ drained: !timedOut });
      for (const connection of connections) connection.disconnect();
    },
  };
}
