import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
let baseUrl: string;

const maxBodyBytes = 1024;
const maxInputBodyBytes = 4096;

beforeAll(async () => {
  env = await createTestEnv({ FOYA_API_MAX_BODY_BYTES: String(maxBodyBytes), FOYA_API_MAX_INPUT_BODY_BYTES: String(maxInputBodyBytes) });
  baseUrl = (await env.startServer()).url;
  client = await env.newTenant();
});
afterAll(async () => env?.close());

interface RawAnswer {
  status: number;
  body: any;
  /** Body bytes the client had sent when the answer arrived. */
  sentBytes: number;
}

/**
 * POSTs over real HTTP, writing `chunkBytes` at a time until `totalBytes` are sent or the
 * server answers, whichever comes first. With `declaredLength` the request says
 * Content-Length (and may lie about what follows); without, it is chunked.
 */
function streamPost(
  path: string,
  options: { key: string; totalBytes: number; chunkBytes: number; declaredLength?: number },
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, baseUrl);
    const headers: Record<string, string | number> = { authorization: `Bearer ${options.key}`, "content-type": "application/json" };
    if (options.declaredLength !== undefined) headers["content-length"] = options.declaredLength;
    const req = httpRequest(url, { method: "POST", headers });
    let sentBytes = 0;
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8");
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null, sentBytes });
        req.destroy();
      });
    });
    // The server may drop the connection once it has answered; that is not a failure of the test.
    req.on("error", (error) => (answered ? undefined : reject(error)));
    const chunk = Buffer.alloc(options.chunkBytes, "a");
    const writeMore = () => {
      while (!answered && sentBytes < options.totalBytes) {
        sentBytes += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", writeMore);
      }
      if (!answered && options.declaredLength === undefined) req.end();
    };
    writeMore();
  });
}

describe("request body limits", () => {
  it("S10: a JSON body over the route's limit answers 413 payload_too_large with the error shape; one under it is accepted", async () => {
    const oversized = await client.post("/v1/projects", { name: "x".repeat(maxBodyBytes) });
    expect(oversized.status).toBe(413);
    expect(oversized.body.error.code).toBe("payload_too_large");
    expect(oversized.body.error.message).toContain(String(maxBodyBytes));
    expect((await client.post("/v1/projects", { name: "small" })).status).toBe(201);
  });

  it("S10: run creation takes the larger input limit, and is refused past it", async () => {
    const { sessionId } = await client.newSession();
    const fits = await client.startRun(sessionId, "y".repeat(maxInputBodyBytes - 200));
    expect(fits.status).toBe(202);
    const { sessionId: other } = await client.newSession();
    const tooLarge = await client.startRun(other, "y".repeat(maxInputBodyBytes));
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error.code).toBe("payload_too_large");
    expect(tooLarge.body.error.message).toContain(String(maxInputBodyBytes));
  });

  it("S10: over real HTTP, a declared Content-Length over the limit is refused before the body is sent", async () => {
    const answer = await streamPost("/v1/projects", {
      key: client.key,
      declaredLength: 400 * 1024 * 1024,
      totalBytes: 400 * 1024 * 1024,
      chunkBytes: 64 * 1024,
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error.code).toBe("payload_too_large");
    expect(answer.sentBytes).toBeLessThan(50 * 1024 * 1024);
  });

  it("S10: over real HTTP, a chunked body without Content-Length is cut off once past the limit, not read whole", async () => {
    const answer = await streamPost("/v1/projects", { key: client.key, totalBytes: 400 * 1024 * 1024, chunkBytes: 64 * 1024 });
    expect(answer.status).toBe(413);
    expect(answer.body).toEqual({ error: { code: "payload_too_large", message: expect.stringContaining(String(maxBodyBytes)) } });
    expect(answer.sentBytes).toBeLessThan(50 * 1024 * 1024);
    // The server is still answering.
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
  });

  it("S10: a chunked body under the limit is read and handled normally over real HTTP", async () => {
    const body = JSON.stringify({ name: "chunked project" });
    const response = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = httpRequest(new URL("/v1/projects", baseUrl), {
        method: "POST",
        headers: { authorization: `Bearer ${client.key}`, "content-type": "application/json" },
      });
      req.on("response", (res) => {
        const parts: Buffer[] = [];
        res.on("data", (part: Buffer) => parts.push(part));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString("utf8")) }));
      });
      req.on("error", reject);
      // Two writes without a length: Node sends them chunked.
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    });
    expect(response.status).toBe(201);
    expect(response.body.name).toBe("chunked project");
  });

  it("S10: without a valid key, a large body is refused by authentication before it is read", async () => {
    const answer = await streamPost("/v1/projects", {
      key: "foya_not_a_key",
      declaredLength: 10 * 1024 * 1024,
      totalBytes: 10 * 1024 * 1024,
      chunkBytes: 64 * 1024,
    });
    expect(answer.status).toBe(401);
  });
});
