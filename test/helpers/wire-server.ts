import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The HTTP side shared by the fake model servers (OpenAI and Anthropic wire formats): real
 * TCP and HTTP, every request recorded with whether its response was read to the end, and
 * streamed responses written one write per chunk, so adapters meet split frames as in
 * production. Each format turns its own script into a `WireResponse`.
 */

export interface RecordedRequest {
  method: string;
  url: string;
  // Tests assert on arbitrary paths of the JSON the adapter sent; typing it would only add casts.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  /** The body as sent, byte for byte (UTF-8): what a prompt cache compares. */
  text: string;
  /** The same, under the name the thinking tests use. */
  rawBody: string;
  headers: IncomingHttpHeaders;
  /** When the whole request had arrived (`Date.now()`). */
  at: number;
  /** The TCP connection it came on, numbered 1, 2... as the server accepted them: equal numbers mean a reused connection. */
  connection: number;
  /** Resolves when the response is over: "aborted" if the client closed the connection before the end. */
  outcome: Promise<"completed" | "aborted">;
}

export type WireResponse =
  /** A plain (error) response, with headers of its own (`retry-after`, rate-limit headers). */
  | { status: number; body: string; headers?: Record<string, string> }
  /** A streamed 200 response: each write is its own `res.write`, `delayMs` apart; the body ends `endDelayMs` after the last. */
  | { contentType: string; writes: Array<string | Uint8Array>; delayMs?: number; endDelayMs?: number };

export interface WireServer {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startWireServer(
  respondTo: (request: Omit<RecordedRequest, "outcome">) => Promise<WireResponse>,
): Promise<WireServer> {
  const requests: RecordedRequest[] = [];
  const connections = new WeakMap<object, number>();
  let accepted = 0;
  const server = createServer((req, res) => {
    let outcomeResolve: (outcome: "completed" | "aborted") => void = () => undefined;
    const outcome = new Promise<"completed" | "aborted">((resolve) => (outcomeResolve = resolve));
    // "close" fires both after a normal end and when the client goes away; only the latter leaves it unfinished.
    res.on("close", () => outcomeResolve(res.writableFinished ? "completed" : "aborted"));

    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      void (async () => {
        const text = Buffer.concat(parts).toString("utf8");
        const request = {
          method: req.method ?? "",
          url: req.url ?? "",
          body: text ? JSON.parse(text) : undefined,
          text,
          rawBody: text,
          headers: req.headers,
          at: Date.now(),
          connection: connections.get(req.socket) ?? 0,
        };
        requests.push({ ...request, outcome });
        await respond(res, await respondTo(request));
      })().catch((error: unknown) => {
        // A broken test handler should fail loudly, not hang the client.
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`wire server handler failed: ${String(error)}`);
      });
    });
  });

  server.on("connection", (socket) => connections.set(socket, ++accepted));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  // Memoized so a test may close early (e.g. to get a refused connection) and the cleanup hook again.
  let closing: Promise<void> | undefined;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        // fetch keeps connections alive; without this close() would wait for them to time out.
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      })),
  };
}

async function respond(res: ServerResponse, response: WireResponse): Promise<void> {
  if ("status" in response) {
    res.writeHead(response.status, { "content-type": "application/json", ...response.headers });
    res.end(response.body);
    return;
  }
  res.writeHead(200, { "content-type": response.contentType, "cache-control": "no-cache", connection: "keep-alive" });
  for (const [i, write] of response.writes.entries()) {
    if (i > 0 && response.delayMs) await pause(res, response.delayMs);
    // The client went away (abort test): stop like a real server would.
    if (res.destroyed) return;
    res.write(write);
  }
  if (response.endDelayMs) await pause(res, response.endDelayMs);
  res.end();
}

/** Waits between writes, cut short when the connection closes so aborted tests end promptly. */
function pause(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on("close", done);
  });
}

// ---------------------------------------------------------------------------
// Recorded streams (test/fixtures/recorded, provenance in its README): a real server's
// response body served again byte for byte, cut into writes as a test chooses.

const recordedDir = new URL("../fixtures/recorded/", import.meta.url);

/** The bytes of a recorded fixture file, as committed. */
export function readRecording(name: string): Buffer {
  return readFileSync(new URL(name, recordedDir));
}

/**
 * How a recorded body is cut into writes: `frames` ends a write after each blank line
 * (one SSE frame per write, as servers flush), `whole` sends it in one write, and
 * `{ seed }` cuts at pseudo-random byte offsets (1 to `maxBytes` bytes a write), so
 * frames, lines, `\n\n` separators and UTF-8 characters split wherever the seed says.
 */
export type RecordingCut = "frames" | "whole" | { seed: number; maxBytes?: number };

/** Cuts `body` into writes whose concatenation is `body` again, byte for byte. */
export function cutRecording(body: Uint8Array, cut: RecordingCut): Uint8Array[] {
  if (cut === "whole") return [body];
  const writes: Uint8Array[] = [];
  let start = 0;
  if (cut === "frames") {
    for (let i = 1; i < body.length; i++) {
      if (body[i] === 0x0a && body[i - 1] === 0x0a) {
        writes.push(body.subarray(start, i + 1));
        start = i + 1;
      }
    }
  } else {
    const next = seededRandom(cut.seed);
    const maxBytes = cut.maxBytes ?? 48;
    while (start < body.length) {
      const end = Math.min(body.length, start + 1 + Math.floor(next() * maxBytes));
      writes.push(body.subarray(start, end));
      start = end;
    }
  }
  if (start < body.length) writes.push(body.subarray(start));
  return writes;
}

/**
 * The SSE body of a recording kept as one JSON chunk per line (the `*.chunks.txt` files
 * copied from vercel/ai): each line, unchanged, becomes a `data:` line, named by an
 * `event:` line carrying its `type` for Anthropic, with OpenAI's closing `data: [DONE]`.
 * The JSON payloads are the recorded bytes; only this framing is reconstructed.
 */
function sseFromChunkLines(text: string, format: "openai" | "anthropic"): Buffer {
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  const frames = lines.map((line) => {
    if (format === "openai") return `data: ${line}\n\n`;
    const type = (JSON.parse(line) as { type: string }).type;
    return `event: ${type}\ndata: ${line}\n\n`;
  });
  if (format === "openai") frames.push("data: [DONE]\n\n");
  return Buffer.from(frames.join(""), "utf8");
}

/** The body a recorded fixture is served as: `.sse` files verbatim, `.chunks.txt` files framed as SSE. */
export function recordedBody(name: string, format: "openai" | "anthropic"): Buffer {
  const file = readRecording(name);
  return name.endsWith(".chunks.txt") ? sseFromChunkLines(file.toString("utf8"), format) : file;
}

/** mulberry32: a small seeded generator, so a failing cut can be replayed from its seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
