import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { Services } from "../services.js";
import { createApp } from "./app.js";

export interface HttpServer {
  readonly url: string;
  close(): Promise<void>;
}

export async function startHttpServer(services: Services, options: { port?: number } = {}): Promise<HttpServer> {
  const app = createApp(services);
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: services.config.host, port: options.port ?? services.config.port }, () => resolve(s));
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
  services.logger.info({ url }, "api listening");
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
