import { startHttpServer, type HttpServer } from "./api/http-server.js";
import { loadConfig } from "./config.js";
import { createServices } from "./services.js";
import { startWorkerRuntime, type WorkerRuntime } from "./worker/worker-runtime.js";

/**
 * Runs the chosen roles in this process and drains them on SIGTERM/SIGINT:
 * the API stops accepting, workers stop taking jobs and finish or hand back
 * the current ones, then connections close.
 */
export async function runProcess(roles: { api: boolean; worker: boolean }): Promise<void> {
  const config = loadConfig();
  const role = roles.api && roles.worker ? "all" : roles.api ? "api" : "worker";
  const services = await createServices(config, { role });
  const server: HttpServer | undefined = roles.api ? await startHttpServer(services) : undefined;
  const worker: WorkerRuntime | undefined = roles.worker ? await startWorkerRuntime(services) : undefined;
  if (server) console.log(`FOYA_API_URL=${server.url}`);
  if (worker) console.log(`FOYA_WORKER_ID=${worker.workerId}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, "draining");
    await server?.close();
    await worker?.close();
    await services.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}
