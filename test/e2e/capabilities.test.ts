import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import {
  finishChunk,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  sseScript,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, repoRoot, testToolsModule, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
let server: OpenAIWireServer;
const requests: Array<{ profile: string; body: any }> = [];

beforeAll(async () => {
  server = await startOpenAIWireServer(({ body }) => {
    requests.push({ profile: body.model, body });
    const answered = body.messages.filter((m: { role: string }) => m.role === "tool").length;
    if (answered > 0) return sse([textChunk("done"), finishChunk("stop")]);
    return sse([
      toolCallStartChunk(0, "call_0", "big_result"),
      toolArgsChunk(0, JSON.stringify({ lines: 200, width: 60 })),
      finishChunk("tool_calls"),
    ]);
  });
  const providersFile = await writeProvidersFile([
    {
      name: "large",
      kind: "openai-chat",
      baseUrl: server.baseUrl,
      model: "large-model",
      capabilities: { contextWindow: 200_000, parallelToolCalls: true, imageInput: true },
    },
    {
      name: "small",
      kind: "openai-chat",
      baseUrl: server.baseUrl,
      model: "small-model",
      capabilities: { contextWindow: 8_000, parallelToolCalls: false, imageInput: false },
    },
  ]);
  env = await createTestEnv({
    FOYA_PROVIDERS_FILE: providersFile,
    FOYA_TOOL_MODULES: `${testToolsModule},${path.join(repoRoot, "test/fixtures/context-tools.ts")}`,
  });
  await env.startWorker();
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await server?.close();
});

const sse = sseScript;

describe("provider capabilities", () => {
  it("PR2: each profile's capabilities shape its requests: parallel tool calls, and the context window's projection limit", async () => {
    for (const profile of ["large", "small"]) {
      const { sessionId } = await client.newSession({ providerProfile: profile });
      const run = await client.startRun(sessionId, "go");
      expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    }
    const of = (model: string) => requests.filter((r) => r.profile === model).map((r) => r.body);
    const [largeFirst, largeSecond] = of("large-model");
    const [smallFirst, smallSecond] = of("small-model");
    // Parallel tool calls: only the profile that cannot take them says so.
    expect(largeFirst).not.toHaveProperty("parallel_tool_calls");
    expect(smallFirst.parallel_tool_calls).toBe(false);
    // A 12,199-character result fits a 200k window whole, and is projected for an 8k one.
    const resultOf = (body: any) => body.messages.find((m: any) => m.role === "tool").content as string;
    expect(resultOf(largeSecond)).toHaveLength(200 * 61 - 1);
    expect(resultOf(smallSecond).length).toBeLessThan(4_000);
    expect(resultOf(smallSecond)).toContain('reference "res_1_0_0"');
    expect(smallSecond.tools.map((t: any) => t.function.name)).toContain("history_read_tool_result");
    expect(largeSecond.tools.map((t: any) => t.function.name)).not.toContain("history_read_tool_result");
  });
});
