import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { performance } from "node:perf_hooks";

/**
 * A zero-latency model in the benchmark process that speaks the OpenAI Chat Completions
 * streaming wire format over real HTTP (like test/helpers/openai-wire-server.ts), so what a
 * worker's provider client costs (a new TCP connection or a reused one, the request's bytes)
 * is measured with the run. Every request is answered with one short text, so a run is one step.
 *
 * A request is told to its waiter by the marker in its last user message (`[[bench:<id>]]`),
 * with its arrival time (performance.now(), the benchmark's clock) and whether it came on a
 * connection an earlier request had opened.
 */
export interface ModelRequestArrival {
  /** The request's headers had arrived. */
  at: number;
  /** An earlier request had used the same connection (keep-alive). */
  reusedConnection: boolean;
}

export interface FakeModelServer {
  /** Ends in `/v1`, like an OpenAI-compatible base URL. */
  baseUrl: string;
  /** Resolves when the first request carrying `marker` arrives. */
  arrivalOf(marker: string): Promise<ModelRequestArrival>;
  /** Connections opened so far. */
  connections(): number;
  close(): Promise<void>;
}

export const benchMarker = (id: string): string => `[[bench:${id}]]`;
const markerPattern = /\[\[bench:([^\]]+)\]\]/;

const created = 1_700_000_000;
const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: "chatcmpl-bench",
  object: "chat.completion.chunk",
  created,
  model: "bench-model",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
});
const answer = [
  chunk({ role: "assistant", content: "done" }),
  chunk({}, "stop"),
  {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created,
    model: "bench-model",
    choices: [],
    usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
  },
]
  .map((part) => `data: ${JSON.stringify(part)}\n\n`)
  .concat("data: [DONE]\n\n")
  .join("");

/** The marker of the request's last user message, if any. */
function markerOf(body: string): string | undefined {
  try {
    const messages = (JSON.parse(body) as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [];
    const user = messages.filter((message) => message.role === "user").at(-1);
    return typeof user?.content === "string" ? markerPattern.exec(user.content)?.[1] : undefined;
  } catch {
    return undefined;
  }
}

export async function startFakeModelServer(): Promise<FakeModelServer> {
  const arrived = new Map<string, ModelRequestArrival>();
  const waiters = new Map<string, (arrival: ModelRequestArrival) => void>();
  const served = new WeakSet<Socket>();
  const sockets = new Set<Socket>();
  let connections = 0;

  const server = createServer((req: IncomingMessage, res) => {
    const arrival: ModelRequestArrival = { at: performance.now(), reusedConnection: served.has(req.socket) };
    served.add(req.socket);
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const marker = markerOf(Buffer.concat(parts).toString("utf8"));
      if (marker !== undefined && !arrived.has(marker)) {
        arrived.set(marker, arrival);
        waiters.get(marker)?.(arrival);
        waiters.delete(marker);
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.end(answer);
    });
  });
  server.on("connection", (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    arrivalOf(marker) {
      const known = arrived.get(marker);
      if (known) return Promise.resolve(known);
      return new Promise((resolve) => waiters.set(marker, resolve));
    },
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
