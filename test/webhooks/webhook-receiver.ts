import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The raw body, exactly as sent: signatures are verified over these bytes. */
  body: string;
  /** Date.now() when the request arrived. */
  at: number;
}

/** What the receiver does with the n-th request (0-based): answer a status, or never answer. */
export type ReceiverPlan = (index: number) => number | "hang";

export interface WebhookReceiver {
  url: string;
  received: ReceivedRequest[];
  close(): Promise<void>;
}

/** A real HTTP server on loopback that records every request. */
export async function startReceiver(plan: ReceiverPlan = () => 200): Promise<WebhookReceiver> {
  const received: ReceivedRequest[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const index = received.length;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) if (typeof value === "string") headers[name] = value;
      received.push({
        method: request.method ?? "",
        path: request.url ?? "",
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      });
      const answer = plan(index);
      if (answer === "hang") {
        hanging.push(response);
        return;
      }
      response.writeHead(answer, { "content-type": "text/plain" }).end(answer >= 300 ? `planned ${answer}` : "ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
