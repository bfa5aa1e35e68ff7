import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

export interface MetricsServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * `/metrics` on a port of its own (`FOYA_METRICS_PORT`), for every process role: a worker-only
 * process has no API to serve it, and a port an operator binds to a private interface needs no
 * token. Nothing else is served here.
 */
export async function startMetricsServer(
  registry: Registry,
  options: { host: string; port: number; onError(error: unknown): void },
): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    if (request.method !== "GET" || (request.url ?? "").split("?")[0] !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      (error: unknown) => {
        options.onError(error);
        response.writeHead(500, { "content-type": "text/plain" }).end("metrics unavailable\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${address.address.includes(":") ? `[${address.address}]` : address.address}:${address.port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
