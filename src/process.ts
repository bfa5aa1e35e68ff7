import { loadConfig, type Config } from "./config.js";
import { startHeartbeatFile } from "./health/heartbeat-file.js";
import { createLogger, type Logger } from "./logger.js";
import { createServices, type Services } from "./services.js";
import { startMetricsServer } from "./observability/metrics-server.js";
import { waitForDependencies } from "./startup/dependency-wait.js";
import { createStartupStatus } from "./startup/startup-status.js";

/**
 * The roles a process may run, handed in by its entry point (src/main.ts, src/api/main.ts,
 * src/worker/main.ts), so this module imports neither the API nor the worker and an
 * API-only process loads no worker code.
 */
export interface ProcessRoles {
  /** Listens at once, before the dependencies answer (`startHttpServerEarly`), and serves once the services are built. */
  api?: (config: Config, logger: Logger, describe: () => string) => Promise<ApiServer>;
  /** Starts taking jobs (`startWorkerRuntime`). */
  worker?: (services: Services) => Promise<WorkerRole>;
}

interface ApiServer {
  readonly url: string;
  serve(services: Services): void;
  close(): Promise<void>;
}

interface WorkerRole {
  readonly workerId: string;
  close(): Promise<void>;
}

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
export async function runProcess(roles: ProcessRoles): Promise<void> {
  const config = loadConfig();
  const role = roles.api && roles.worker ? "all" : roles.api ? "api" : "worker";
  const logger = createLogger(config.logging.level, { role });
  const startup = createStartupStatus();
  const server = roles.api ? await roles.api(config, logger, startup.describe) : undefined;
  if (server) console.log(`FOYA_API_LISTENING=${server.url}`);

  await waitForDependencies(config, { logger, status: startup });
  const services = await createServices(config, { role, logger, startup });
  if (server) {
    server.serve(services);
    console.log(`FOYA_API_URL=${server.url}`);
  }
  const worker = roles.worker ? await roles.worker(services) : undefined;
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
