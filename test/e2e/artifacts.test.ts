import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyPng } from "../fixtures/test-tools.js";
import { script, type ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import {
  finishChunk,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  sseScript,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { readSse } from "../helpers/sse-client.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
let baseUrl: string;
let server: OpenAIWireServer;

const pngBase64 = tinyPng.toString("base64");
const sse = sseScript;

beforeAll(async () => {
  // Step 1 of every wire run calls the tool named in the user's input; step 2 answers text.
  server = await startOpenAIWireServer(({ body }) => {
    if (body.messages.some((m: { role: string }) => m.role === "tool")) return sse([textChunk("seen"), finishChunk("stop")]);
    const input = JSON.parse(body.messages.findLast((m: { role: string }) => m.role === "user").content) as { tool: string; args: object };
    return sse([toolCallStartChunk(0, "call_img", input.tool), toolArgsChunk(0, JSON.stringify(input.args)), finishChunk("tool_calls")]);
  });
  const capabilities = (imageInput: boolean) => ({ imageInput, parallelToolCalls: true, contextWindow: 128_000 });
  const providersFile = await writeProvidersFile([
    { name: "vision", kind: "openai-chat", baseUrl: server.baseUrl, model: "vision-model", capabilities: capabilities(true) },
    { name: "blind", kind: "openai-chat", baseUrl: server.baseUrl, model: "text-model", capabilities: capabilities(false) },
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile });
  await env.startWorker();
  baseUrl = (await env.startServer()).url;
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await server?.close();
});

/** A raw HTTP GET over the real server: artifact bytes are not JSON. */
function send(key: string | null, urlPath: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${baseUrl}${urlPath}`, { headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) } });
}

async function toolMessages(sessionId: string): Promise<any[]> {
  return (await client.messages(sessionId)).filter((m) => m.role === "tool").map((m) => m.content);
}

describe("artifact store", () => {
  it("I1: image bytes a tool returns are stored content-addressed; the tool message holds image references, identical bytes share one blob and one artifact", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "make_image", args: { copies: 2, extra: "csv" } }], [{ tool: "make_image", args: {} }], [{ text: "ok" }]]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const [first, second] = await toolMessages(sessionId);
    expect(first.isError).toBe(false);
    expect(first.content).toEqual([
      { type: "text", text: "made an image" },
      { type: "image", artifactId: expect.stringMatching(/^art_/), mediaType: "image/png" },
      { type: "image", artifactId: expect.stringMatching(/^art_/), mediaType: "image/png" },
      { type: "artifact", artifactId: expect.stringMatching(/^art_/), mediaType: "text/csv", name: "data.csv" },
    ]);
    // Same bytes in the same session: the same artifact, in this call and the next one.
    const imageId = first.content[1].artifactId;
    expect(first.content[2].artifactId).toBe(imageId);
    expect(second.content[1]).toEqual({ type: "image", artifactId: imageId, mediaType: "image/png" });
    const blobs = await env.query<{ size: string; count: string }>(
      "select b.size::text, count(*)::text from content_blobs b join artifacts a on a.sha256 = b.sha256 and a.tenant_id = b.tenant_id where a.session_id = $1 group by b.size order by b.size",
      [sessionId],
    );
    expect(blobs).toEqual([
      { size: "8", count: "1" },
      { size: String(tinyPng.length), count: "1" },
    ]);
    // The stored call result holds references too, never bytes.
    const results = await env.query<{ result: string }>("select result::text from tool_calls where run_id = $1", [run.body.id]);
    for (const row of results) expect(row.result).not.toContain(pngBase64);

    // A second session gets its own artifact for the same bytes, sharing the tenant's blob.
    const other = await client.newSession();
    const again = await client.startRun(other.sessionId, script([[{ tool: "make_image", args: {} }], [{ text: "ok" }]]));
    await client.waitForRun(again.body.id);
    const [otherMessage] = await toolMessages(other.sessionId);
    expect(otherMessage.content[1].artifactId).not.toBe(imageId);
    const [{ count }] = (await env.query<{ count: string }>("select count(*)::text as count from content_blobs where size = $1", [
      tinyPng.length,
    ])) as [{ count: string }];
    expect(count).toBe("1");
  });

  it("I1: bytes that are no image, or too large, are not stored; the result says why and is an error", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "make_image", args: { copies: 0, extra: "not_image" } },
          { tool: "make_image", args: { copies: 0, extra: "too_large" } },
        ],
        [{ text: "ok" }],
      ]),
    );
    await client.waitForRun(run.body.id);
    const [notImage, tooLarge] = await toolMessages(sessionId);
    expect(notImage).toMatchObject({ isError: true, status: "failed" });
    expect(notImage.content[1].text).toMatch(/^\[image not stored: not a PNG, JPEG, GIF or WebP image/);
    expect(tooLarge.content[1].text).toMatch(/exceed the limit of 20971520 bytes/);
    const calls = await env.query<{ error_code: string }>("select error_code from tool_calls where run_id = $1 order by call_index", [
      run.body.id,
    ]);
    expect(calls.map((c) => c.error_code)).toEqual(["artifact_rejected", "artifact_rejected"]);
    expect(await env.query("select id from artifacts where session_id = $1", [sessionId])).toEqual([]);
  });

  it("I1: read returns a workspace image (told by its bytes, not its name) as an image result; text files stay text", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    await writeFile(path.join(workspace, "shot.dat"), tinyPng);
    await writeFile(path.join(workspace, "fake.png"), "not really a png\n");
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "read", args: { path: "shot.dat" } },
          { tool: "read", args: { path: "fake.png" } },
        ],
        [{ text: "ok" }],
      ]),
    );
    await client.waitForRun(run.body.id);
    const [image, text] = await toolMessages(sessionId);
    expect(image.content).toEqual([
      { type: "text", text: `"shot.dat": image/png image, ${tinyPng.length} bytes` },
      { type: "image", artifactId: expect.stringMatching(/^art_/), mediaType: "image/png" },
    ]);
    expect(text.content).toEqual([{ type: "text", text: "     1\tnot really a png" }]);
    const bytes = await send(client.key, `/v1/artifacts/${image.content[1].artifactId}`);
    expect(Buffer.from(await bytes.arrayBuffer()).equals(tinyPng)).toBe(true);
  });

  it("I2: events and SSE carry references only; GET /v1/artifacts/:id serves the exact bytes with their type; another tenant gets 404", async () => {
    const { sessionId } = await client.newSession();
    const frames = readSse(`${baseUrl}/v1/sessions/${sessionId}/events`, client.key, { until: (event) => event.event === "run_end" });
    const run = await client.startRun(sessionId, script([[{ tool: "make_image", args: { extra: "csv" } }], [{ text: "ok" }]]));
    await client.waitForRun(run.body.id);
    const seen = await frames;
    const end = seen.find((event) => event.event === "tool_end")!;
    const [message] = await toolMessages(sessionId);
    const imageId = message.content[1].artifactId as string;
    const csvId = message.content[2].artifactId as string;
    expect(end.data.data.preview).toBe(`made an image\n[image ${imageId}]\n[artifact ${csvId}]`);
    expect(JSON.stringify(seen)).not.toContain(pngBase64);
    const rows = await env.query<{ data: string }>("select data::text from events where session_id = $1", [sessionId]);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.data).not.toContain(pngBase64);

    const response = await send(client.key, `/v1/artifacts/${imageId}`);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(tinyPng)).toBe(true);
    const [{ sha256 }] = (await env.query<{ sha256: string }>("select sha256 from artifacts where id = $1", [imageId])) as [
      { sha256: string },
    ];
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "content-type": "image/png",
      "content-length": String(tinyPng.length),
      etag: `"${sha256}"`,
      "cache-control": "private, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
    });
    expect((await send(client.key, `/v1/artifacts/${imageId}`, { "if-none-match": `"${sha256}"` })).status).toBe(304);
    const csv = await send(client.key, `/v1/artifacts/${csvId}`);
    expect(csv.headers.get("content-type")).toBe("text/csv");
    expect(csv.headers.get("content-disposition")).toBe("attachment");
    expect(await csv.text()).toBe("a,b\n1,2\n");

    const meta = await client.get(`/v1/artifacts/${imageId}/meta`);
    expect(meta.body).toEqual({
      id: imageId,
      sessionId,
      mediaType: "image/png",
      size: tinyPng.length,
      sha256,
      createdAt: expect.any(String),
    });

    const stranger = await env.newTenant("stranger");
    expect((await send(stranger.key, `/v1/artifacts/${imageId}`)).status).toBe(404);
    expect((await stranger.get(`/v1/artifacts/${imageId}/meta`)).status).toBe(404);
    expect((await send(client.key, "/v1/artifacts/art_missing")).status).toBe(404);
    expect((await send(null, `/v1/artifacts/${imageId}`)).status).toBe(401);
  });
});

describe("image materialization", () => {
  async function runOnWire(profile: string): Promise<{ sessionId: string; body: any }> {
    const { sessionId } = await client.newSession({ providerProfile: profile });
    const before = server.requests.length;
    const run = await client.startRun(sessionId, JSON.stringify({ tool: "make_image", args: {} }));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const requests = server.requests.slice(before);
    expect(requests).toHaveLength(2);
    return { sessionId, body: requests[1]!.body };
  }

  it("I3: for a model that takes images, the next request carries the image from the store as a data URL after the tool messages", async () => {
    const { sessionId, body } = await runOnWire("vision");
    const [message] = await toolMessages(sessionId);
    const artifactId = message.content[1].artifactId;
    const roles = body.messages.map((m: { role: string }) => m.role);
    expect(roles).toEqual(["user", "assistant", "tool", "user"]);
    expect(body.messages[2]).toEqual({
      role: "tool",
      tool_call_id: "call_img",
      content: "made an image\n[image (image/png): attached in the next user message]",
    });
    expect(body.messages[3].content).toEqual([
      { type: "text", text: "The image returned by tool call call_img (make_image):" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${pngBase64}` } },
    ]);
    // History keeps the reference, not the bytes.
    expect(message.content[1]).toEqual({ type: "image", artifactId, mediaType: "image/png" });
  });

  it("I3: for a model that does not take images, the request says the image was omitted and carries no image data; history keeps the artifact", async () => {
    const { sessionId, body } = await runOnWire("blind");
    const [message] = await toolMessages(sessionId);
    const artifactId = message.content[1].artifactId;
    expect(body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(body.messages[2].content).toBe(
      `made an image\n[image omitted: artifact ${artifactId} (image/png); this model does not take images]`,
    );
    expect(JSON.stringify(body)).not.toContain(pngBase64);
    expect(JSON.stringify(body)).not.toContain("image_url");
    expect(message.content[1]).toEqual({ type: "image", artifactId, mediaType: "image/png" });
    expect((await send(client.key, `/v1/artifacts/${artifactId}`)).status).toBe(200);
  });
});
