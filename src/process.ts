import { startHttpServerEarly, type StartingHttpServer } from "./api/http-server.js";
import { loadConfig } from "./config.js";
import { startHeartbeatFile } from "./health/heartbeat-file.js";
import { createLogger } from "./logger.js";
import { createServices } from "./services.js";
import { startMetricsServer } from "./observability/metrics-server.js";
import { waitForDependencies } from "./startup/dependency-wait.js";
import { createStartupStatus } from "./startup/startup-status.js";
import { startWorkerRuntime, type WorkerRuntime } from "./worker/worker-runtime.js";

/**
 * Runs the chosen roles in this process and drains them on SIGTERM/SIGINT:
 * the API stops accepting, workers stop taking jobs and finish or hand back
 * the current ones, then connections close.
 *
 * Start-up survives its dependencies (SPEC D9): an API listens at once and answers
 * `/readyz` 503 (`checks.startup`) and every other route 503 `starting` until it serves;
 * then the process waits, with backoff and a warning per attempt, until Postgres and
 * Redis answer, applies migrations (FOYA_MIGRATE_ON_START) and builds its services.
 *
 * Lines for scripts on stdout: `FOYA_API_LISTENING=<url>` once the port is open,
 * `FOYA_API_URL=<url>` once the API serves, `FOYA_WORKER_ID=<id>` and
 * `FOYA_WORKER_PID=<pid>` once the worker takes jobs, `FOYA_METRICS_URL=<url>` with a metrics port.
 */
export async function runProcess(roles: { api: boolean; worker: boolean }): Promise<void> {
  const config = loadConfig();
  const role = roles.api && roles.worker ? "all" : roles.api ? "api" : "worker";
  const logger = createLogger(config.logging.level, { role });
  const startup = createStartupStatus();
  const server: StartingHttpServer | undefined = roles.api ? await startHttpServerEarly(config, logger, startup.describe) : undefined;
  if (server) console.log(`FOYA_API_LISTENING=${server.url}`);

  await waitForDependencies(config, { logger, status: startup });
  const services = await createServices(config, { role, logger, startup });
  if (server) {
    server.serve(services);
    console.log(`FOYA_API_URL=${server.url}`);
  }
  const worker: WorkerRuntime | undefined = roles.worker ? await startWorkerRuntime(services) : undefined;
  const { port: metricsPort, host: metricsHost } = config.metrics;
  const metricsServer =
    metricsPort === undefined
      ? undefined
      : await startMetricsServer(services.metrics.registry, {
          host: metricsHost,
          port: metricsPort,
          onError: (error) => logger.warn({ err: error }, "collecting metrics failed"),
        });
  if (metricsServer) console.log(`FOYA_METRICS_URL=${metricsServer.url}`);
  const heartbeat =
    worker && config.workers.heartbeatFile
      ? startHeartbeatFile(config.workers.heartbeatFile, (error) =>
          logger.warn({ err: error }, "worker heartbeat file could not be written"),
        )
      : undefined;
  if (worker) {
    // One write: a script that sees the id line sees the pid line too.
    console.log(`FOYA_WORKER_ID=${worker.workerId}\nFOYA_WORKER_PID=${process.pid}`);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, "draining");
    await heartbeat?.stop();
    await server?.close();
    await worker?.close();
    await metricsServer?.close();
    await services.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}
