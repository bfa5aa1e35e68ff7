import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Services } from "../services.js";
import { createApp } from "./app.js";
import { createStartingApp } from "./starting-app.js";

export interface HttpServer {
  readonly url: string;
  close(): Promise<void>;
}

/** An API listening before its services exist: it answers as `createStartingApp` does until `serve` is called. */
export interface StartingHttpServer extends HttpServer {
  /** From now on every request goes to the full API built on these services. */
  serve(services: Services): void;
}

type Fetch = Parameters<typeof serve>[0]["fetch"];

export async function startHttpServer(services: Services, options: { port?: number } = {}): Promise<HttpServer> {
  const app = createApp(services);
  return listen(app.fetch, services.config.api.host, options.port ?? services.config.api.port, services.logger);
}

/**
 * Listens at once, before Postgres and Redis answer (SPEC D9), so `/healthz` and `/readyz`
 * answer while start-up waits; `describe` says what it waits for.
 */
export async function startHttpServerEarly(
  config: Pick<Config, "api">,
  logger: Logger,
  describe: () => string,
): Promise<StartingHttpServer> {
  let current: Fetch = createStartingApp(describe).fetch;
  const server = await listen((request, env) => current(request, env), config.api.host, config.api.port, logger);
  return {
    ...server,
    serve(services) {
      current = createApp(services).fetch;
      logger.info({ url: server.url }, "api serving");
    },
  };
}

async function listen(fetch: Fetch, hostname: string, port: number, logger: Logger): Promise<HttpServer> {
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch, hostname, port }, () => resolve(s));
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
  logger.info({ url }, "api listening");
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        // SSE streams never end on their own: stop accepting, then drop open connections.
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
