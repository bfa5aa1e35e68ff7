import { describe, expect, it } from "vitest";
import { maxArtifactBytes } from "../../src/store/artifacts.js";
import { normalizeMediaType, sniffImageMediaType } from "../../src/artifacts/media-types.js";
import { storeResultArtifacts } from "../../src/artifacts/store-result-artifacts.js";
import { compileMessages } from "../../src/context/compile-request.js";
import type { HistoryMessage } from "../../src/core/history.js";
import type { ArtifactId, SessionId, TenantId } from "../../src/ids.js";
import { tinyPng } from "../fixtures/test-tools.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv();

async function newScope(c = client): Promise<{ tenantId: TenantId; sessionId: SessionId }> {
  const { sessionId } = await c.newSession();
  const [row] = await env.query<{ tenant_id: TenantId }>("select tenant_id from sessions where id = $1", [sessionId]);
  return { tenantId: row!.tenant_id, sessionId };
}

const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46]);
const gif = Buffer.from("GIF89a\x01\x00\x01\x00", "latin1");
const webp = Buffer.concat([Buffer.from("RIFF"), Buffer.from([0x24, 0, 0, 0]), Buffer.from("WEBPVP8 ")]);

describe("media types", () => {
  it("I1: images are told by their magic bytes, nothing else", () => {
    expect(sniffImageMediaType(tinyPng)).toBe("image/png");
    expect(sniffImageMediaType(jpeg)).toBe("image/jpeg");
    expect(sniffImageMediaType(gif)).toBe("image/gif");
    expect(sniffImageMediaType(webp)).toBe("image/webp");
    expect(sniffImageMediaType(Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>"))).toBeUndefined();
    expect(sniffImageMediaType(Buffer.from("RIFF\0\0\0\0WAVE"))).toBeUndefined();
    expect(sniffImageMediaType(tinyPng.subarray(0, 4))).toBeUndefined();
  });

  it("I1: declared media types are plain type/subtype, lower-cased", () => {
    expect(normalizeMediaType(" Text/CSV ")).toBe("text/csv");
    expect(normalizeMediaType("application/vnd.foo+json")).toBe("application/vnd.foo+json");
    expect(normalizeMediaType("text/html; charset=utf-8")).toBeUndefined();
    expect(normalizeMediaType("text/html\r\nx-evil: 1")).toBeUndefined();
    expect(normalizeMediaType("nonsense")).toBeUndefined();
  });
});

describe("storing result bytes", () => {
  it("I1: image and binary parts become references; the same bytes twice are one artifact and one blob", async () => {
    const scope = await newScope();
    const stored = await storeResultArtifacts(env.services.store, scope, {
      content: [
        { type: "text", text: "two shots" },
        { type: "image-data", mediaType: "image/jpeg", data: tinyPng },
        { type: "image-data", mediaType: "image/png", data: Buffer.from(tinyPng) },
        { type: "binary", mediaType: "Application/JSON", name: "out.json", data: Buffer.from("{}") },
      ],
      displayDiff: "kept",
    });
    const [, first, second, json] = stored.content;
    // The bytes decide the type, not the tool's claim.
    expect(first).toEqual({ type: "image", artifactId: expect.stringMatching(/^art_/), mediaType: "image/png" });
    expect(second).toEqual(first);
    expect(json).toEqual({ type: "artifact", artifactId: expect.stringMatching(/^art_/), mediaType: "application/json", name: "out.json" });
    expect(stored).toMatchObject({ displayDiff: "kept" });
    expect(stored.isError).toBeUndefined();
    const rows = await env.query("select id from artifacts where session_id = $1", [scope.sessionId]);
    expect(rows).toHaveLength(2);
    const found = await env.services.store.artifacts.findArtifact(scope.tenantId, (first as { artifactId: ArtifactId }).artifactId);
    expect(found?.bytes.equals(tinyPng)).toBe(true);
  });

  it("I1: storing concurrently (a redelivered job racing the first) still answers one artifact", async () => {
    const scope = await newScope();
    const data = Buffer.from("concurrent bytes");
    const ids = await Promise.all(
      Array.from({ length: 8 }, () => env.services.store.artifacts.putArtifact(scope, { mediaType: "text/plain", data })),
    );
    expect(new Set(ids.map((stored) => stored.id)).size).toBe(1);
    expect(await env.query("select id from artifacts where session_id = $1", [scope.sessionId])).toHaveLength(1);
  });

  it("I1: a result with no bytes is passed through unchanged; rejected bytes make an is_error result that keeps the tool's own code", async () => {
    const scope = await newScope();
    const plain = { content: [{ type: "text" as const, text: "hi" }] };
    expect(await storeResultArtifacts(env.services.store, scope, plain)).toBe(plain);
    const rejected = await storeResultArtifacts(env.services.store, scope, {
      content: [
        { type: "binary", mediaType: "text/html; charset=utf-8", data: Buffer.from("<b>") },
        { type: "image-data", mediaType: "image/png", data: Buffer.alloc(maxArtifactBytes + 1) },
      ],
      isError: true,
      errorCode: "tool_code",
    });
    expect(rejected).toMatchObject({ isError: true, errorCode: "tool_code" });
    expect(rejected.content).toEqual([
      { type: "text", text: '[binary content not stored: invalid media type "text/html; charset=utf-8"]' },
      { type: "text", text: `[image not stored: ${maxArtifactBytes + 1} bytes exceed the limit of ${maxArtifactBytes} bytes]` },
    ]);
    expect(await env.query("select id from artifacts where session_id = $1", [scope.sessionId])).toEqual([]);
  });
});

/** History as the step job loads it: each message with its place in the session. */
const entries = (history: HistoryMessage[]) =>
  history.map((message, index) => ({
    message,
    position: { runOrdinal: 1, stepIndex: index, part: message.role === "tool" ? (2 as const) : (1 as const), callIndex: 0 },
  }));
const resultLimit = 100_000;

describe("context compiler", () => {
  const toolMessage = (artifactIds: ArtifactId[]): HistoryMessage => ({
    role: "tool",
    callId: "c1",
    name: "shot",
    status: "succeeded",
    isError: false,
    content: [
      { type: "text", text: "see" },
      ...artifactIds.map((artifactId) => ({ type: "image" as const, artifactId, mediaType: "image/png" })),
    ],
  });

  it("I3: images are materialized from the session's store for image models, as notes for the others, deterministically", async () => {
    const scope = await newScope();
    const { id } = await env.services.store.artifacts.putArtifact(scope, { mediaType: "image/png", data: tinyPng });
    const history: HistoryMessage[] = [
      { role: "user", text: "go" },
      { role: "assistant", text: "", toolCalls: [{ callId: "c1", name: "shot", argumentsRaw: "{}" }] },
      toolMessage([id, "art_gone"]),
    ];
    const artifacts = env.services.store.artifacts.artifactReader(scope);
    const vision = await compileMessages(entries(history), { resultLimit, imageInput: true, artifacts });
    expect(vision[2]).toEqual({
      role: "tool",
      callId: "c1",
      name: "shot",
      isError: false,
      content: [
        { type: "text", text: "see" },
        { type: "image", mediaType: "image/png", dataBase64: tinyPng.toString("base64") },
        { type: "text", text: "[image omitted: artifact art_gone (image/png); not in this session's artifact store]" },
      ],
    });
    expect(JSON.stringify(await compileMessages(entries(history), { resultLimit, imageInput: true, artifacts }))).toBe(
      JSON.stringify(vision),
    );
    const blind = await compileMessages(entries(history), { resultLimit, imageInput: false, artifacts });
    expect(blind[2]).toMatchObject({
      content: [
        { type: "text", text: "see" },
        { type: "text", text: `[image omitted: artifact ${id} (image/png); this model does not take images]` },
        { type: "text", text: "[image omitted: artifact art_gone (image/png); this model does not take images]" },
      ],
    });
    // History itself is untouched.
    expect(history[2]).toEqual(toolMessage([id, "art_gone"]));
  });

  it("I3: only the most recent images are sent; another session's or tenant's artifact is never loaded", async () => {
    const scope = await newScope();
    const older = await env.services.store.artifacts.putArtifact(scope, { mediaType: "image/gif", data: gif });
    const newer = await env.services.store.artifacts.putArtifact(scope, { mediaType: "image/png", data: tinyPng });
    const history = [toolMessage([older.id]), toolMessage([newer.id])];
    const compiled = await compileMessages(entries(history), {
      resultLimit,
      imageInput: true,
      artifacts: env.services.store.artifacts.artifactReader(scope),
      maxImages: 1,
    });
    expect(compiled.map((m) => (m.role === "tool" ? m.content[1] : undefined))).toEqual([
      { type: "text", text: `[image omitted: artifact ${older.id} (image/png); only the most recent images are sent]` },
      { type: "image", mediaType: "image/png", dataBase64: tinyPng.toString("base64") },
    ]);

    const otherSession = await newScope();
    const stranger = await newScope(await env.newTenant("stranger"));
    for (const elsewhere of [otherSession, stranger]) {
      const [message] = await compileMessages(entries([toolMessage([newer.id])]), {
        resultLimit,
        imageInput: true,
        artifacts: env.services.store.artifacts.artifactReader(elsewhere),
      });
      expect(message).toMatchObject({
        content: [{ type: "text" }, { type: "text", text: expect.stringContaining("not in this session's artifact store") }],
      });
    }
  });
});
