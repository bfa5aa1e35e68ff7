import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A fake model server speaking the OpenAI Chat Completions streaming wire format
 * over real HTTP, so adapter tests exercise fetch, TCP framing and SSE parsing
 * exactly as production does.
 */

/** What the server sends back for one request. */
export type WireScript =
  /** A plain (error) response. */
  | { status: number; body: string }
  /**
   * An SSE response. Objects are sent as `data: <json>\n\n`; strings and bytes are
   * written raw, so a test can send `data: [DONE]\n\n`, garbage, or one SSE frame
   * (even one UTF-8 character) split across writes. Each chunk is its own write.
   */
  | { chunks: Array<object | string | Uint8Array>; delayMs?: number };

export interface WireRequest {
  // Tests assert on arbitrary paths of the JSON the adapter sent; typing it would only add casts.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  headers: IncomingHttpHeaders;
  /** Resolves when the response is over: "aborted" if the client closed the connection before the end. */
  outcome: Promise<"completed" | "aborted">;
}

export interface OpenAIWireServer {
  /** Ends in `/v1`, like a real OpenAI-compatible base URL. */
  baseUrl: string;
  requests: WireRequest[];
  close(): Promise<void>;
}

export async function startOpenAIWireServer(
  handler: (request: Omit<WireRequest, "outcome">) => WireScript | Promise<WireScript>,
): Promise<OpenAIWireServer> {
  const requests: WireRequest[] = [];

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
        const request = { body: text ? JSON.parse(text) : undefined, headers: req.headers };
        requests.push({ ...request, outcome });
        const script = await handler(request);
        await respond(res, script);
      })().catch((error: unknown) => {
        // A broken test handler should fail loudly, not hang the client.
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`wire server handler failed: ${String(error)}`);
      });
    });
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  // Memoized so a test may close early (e.g. to get a refused connection) and the cleanup hook again.
  let closing: Promise<void> | undefined;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        // fetch keeps connections alive; without this close() would wait for them to time out.
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      })),
  };
}

async function respond(res: ServerResponse, script: WireScript): Promise<void> {
  if ("status" in script) {
    res.writeHead(script.status, { "content-type": "application/json" });
    res.end(script.body);
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  for (const [i, chunk] of script.chunks.entries()) {
    if (i > 0 && script.delayMs) await pause(res, script.delayMs);
    // The client went away (abort test): stop like a real server would.
    if (res.destroyed) return;
    res.write(typeof chunk === "string" || chunk instanceof Uint8Array ? chunk : `data: ${JSON.stringify(chunk)}\n\n`);
  }
  res.end();
}

/** Waits between chunks, cut short when the connection closes so aborted tests end promptly. */
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
// Chunk builders, shaped like what api.openai.com sends.

const created = 1_700_000_000;

function completionChunk(delta: Record<string, unknown>, finishReason: string | null = null): object {
  return {
    id: "chatcmpl-wire-test",
    object: "chat.completion.chunk",
    created,
    model: "wire-test-model",
    system_fingerprint: "fp_wire_test",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

export function textChunk(text: string): object {
  return completionChunk({ content: text });
}

/** First chunk of a tool call: carries id and name, and empty arguments, as OpenAI does. */
export function toolCallStartChunk(index: number, id: string, name: string): object {
  return completionChunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] });
}

export function toolArgsChunk(index: number, fragment: string): object {
  return completionChunk({ tool_calls: [{ index, function: { arguments: fragment } }] });
}

export function finishChunk(reason: string): object {
  return completionChunk({}, reason);
}

/** The `include_usage` chunk: sent last, with no choices. */
export function usageChunk(prompt: number, completion: number): object {
  return {
    id: "chatcmpl-wire-test",
    object: "chat.completion.chunk",
    created,
    model: "wire-test-model",
    system_fingerprint: "fp_wire_test",
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}
