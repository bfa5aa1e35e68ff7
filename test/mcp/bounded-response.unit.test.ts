import { describe, expect, it } from "vitest";
import { boundResponse } from "../../src/mcp/bounded-response.js";

/** A response whose body arrives in these chunks. */
function responseOf(chunks: string[], contentType: string): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": contentType } });
}

/** The body as text through a bound of `max` bytes, or the error, and what `onTooLarge` was told. */
async function read(chunks: string[], contentType: string, max: number): Promise<{ text?: string; error?: string; told: string[] }> {
  const told: string[] = [];
  const bounded = boundResponse(responseOf(chunks, contentType), max, (what) => told.push(what));
  try {
    return { text: await bounded.text(), told };
  } catch (error) {
    return { error: (error as Error).message, told };
  }
}

describe("M3: an HTTP MCP server's response is bounded as it streams", () => {
  it("M3: a JSON body is counted whole, however it is split", async () => {
    expect(await read(['{"a":', '"12345"}'], "application/json", 13)).toEqual({ text: '{"a":"12345"}', told: [] });
    expect(await read(['{"a":', '"123456"}'], "application/json", 13)).toEqual({
      error: "the server sent a response body larger than 13 bytes",
      told: ["a response body"],
    });
  });

  it("M3: an event stream is counted per event, whichever line ends (LF, CRLF, CR) close them and wherever the chunks split", async () => {
    const event = (data: string, end: string) => `data: ${data}${end}${end}`;
    for (const end of ["\n", "\r\n", "\r"]) {
      // Each event is 18 bytes with its blank line (20 with CRLF); the stream is far longer.
      const stream = Array.from({ length: 50 }, () => event("0123456789", end)).join("");
      const chunks = stream.match(/[\s\S]{1,7}/g) ?? [];
      expect(await read(chunks, "text/event-stream", 20), JSON.stringify(end)).toEqual({ text: stream, told: [] });
      // Too large as one event, though each of its lines is short (the parser joins data lines into one message).
      const large = `${stream}${Array.from({ length: 5 }, () => `data: xy${end}`).join("")}${end}`;
      expect(await read(large.match(/[\s\S]{1,7}/g) ?? [], "text/event-stream", 20), JSON.stringify(end)).toEqual({
        error: "the server sent an event larger than 20 bytes",
        told: ["an event"],
      });
    }
  });
});
