import { setImmediate as nextTurn } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProviderProfileConfig } from "../../src/config.js";
import { createProviderRegistry, type ProviderRegistry } from "../../src/providers/provider-registry.js";
import { finishChunk, sseScript, startOpenAIWireServer, textChunk, type OpenAIWireServer } from "../helpers/openai-wire-server.js";

let server: OpenAIWireServer;
let registry: ProviderRegistry;

beforeAll(async () => {
  // The body ends a little after `data: [DONE]`, as it may over a real network.
  server = await startOpenAIWireServer(() => ({ ...sseScript([textChunk("ok"), finishChunk("stop")]), endDelayMs: 30 }));
  const profile = (name: string): ProviderProfileConfig => ({
    name,
    kind: "openai-chat",
    baseUrl: server.baseUrl,
    model: "m",
    timeoutMs: 10_000,
    capabilities: { imageInput: false, parallelToolCalls: true, contextWindow: 128_000 },
    fallbacks: [],
    throttleWaitMs: 0,
  });
  // Two profiles of one server: only their pools keep their connections apart.
  registry = createProviderRegistry([profile("first"), profile("second")]);
});
afterAll(async () => {
  await registry?.close();
  await server?.close();
});

/** One streamed request of the profile, read to its finish; then one event-loop turn, in which the pool takes the connection back. */
async function ask(profile: string): Promise<number> {
  const request = { model: "", system: "", messages: [{ role: "user" as const, text: "hi" }], tools: [] };
  let finish: string | undefined;
  for await (const part of registry.get(profile).stream(request, new AbortController().signal))
    if (part.type === "finish") finish = part.reason;
  expect(finish).toBe("stop");
  await nextTurn();
  return server.requests.at(-1)?.connection ?? 0;
}

describe("provider connection pools", () => {
  it("PR1: a profile's requests reuse one keep-alive connection, also when the body ends after the last event", async () => {
    const connections = [await ask("first"), await ask("first"), await ask("first")];
    expect(new Set(connections).size).toBe(1);
  });

  it("PR1: two profiles never share a connection, each keeps its own", async () => {
    const first: number[] = [];
    const second: number[] = [];
    for (let i = 0; i < 3; i++) {
      first.push(await ask("first"));
      second.push(await ask("second"));
    }
    expect(new Set(first).size).toBe(1);
    expect(new Set(second).size).toBe(1);
    expect(first[0]).not.toBe(second[0]);
  });
});
