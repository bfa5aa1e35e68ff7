import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  type OpenAIWireServer,
  type WireScript,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, repoRoot, testToolsModule, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
let server: OpenAIWireServer;
let respond: (body: any) => WireScript;
const contextWindow = 32_000;
/** What the compiler may send whole for that window (5 % of it, 4 characters per token). */
const limit = contextWindow * 4 * 0.05;

beforeAll(async () => {
  server = await startOpenAIWireServer(({ body }) => respond(body));
  const providersFile = await writeProvidersFile([
    {
      name: "small",
      kind: "openai-chat",
      baseUrl: server.baseUrl,
      model: "small-model",
      capabilities: { contextWindow, imageInput: false },
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
const toolNames = (body: any): string[] => (body.tools ?? []).map((tool: any) => tool.function.name);
const calls = (entries: Array<[string, object]>) => [
  ...entries.flatMap(([name, args], index) => [
    toolCallStartChunk(index, `call_${index}`, name),
    toolArgsChunk(index, JSON.stringify(args)),
  ]),
  finishChunk("tool_calls"),
];

describe("context compiler", () => {
  it("O2, O3: a 5 MiB result is projected with a reference, history keeps all of it, the request is the same twice, and history_read_tool_result reads it", async () => {
    const requests: any[] = [];
    const lines = 60_000;
    respond = (body) => {
      requests.push(body);
      const answered = body.messages.filter((m: { role: string }) => m.role === "tool").length;
      if (answered === 0) return sse(calls([["big_result", { lines, width: 88 }]]));
      if (answered === 1)
        return sse(
          calls([
            ["history_read_tool_result", { reference: "res_1_0_0", operation: "inspect" }],
            ["history_read_tool_result", { reference: "res_1_0_0", operation: "read", startLine: 100, endLine: 102 }],
            ["history_read_tool_result", { reference: "res_1_0_0", operation: "search", pattern: "line 059999", contextLines: 1 }],
            ["history_read_tool_result", { reference: "res_1_0_0", operation: "read", startLine: 999_999 }],
            ["history_read_tool_result", { reference: "res_1_0_0", operation: "search", pattern: "(", regex: true }],
            ["history_read_tool_result", { reference: "res_9_9_9", operation: "inspect" }],
          ]),
        );
      return sse([textChunk("done"), finishChunk("stop")]);
    };
    const { sessionId } = await client.newSession({ providerProfile: "small" });
    const run = await client.startRun(sessionId, "look at the big result");
    expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
    expect(requests).toHaveLength(3);

    // O3: the tool is offered only once a projected result is in the request.
    expect(toolNames(requests[0])).not.toContain("history_read_tool_result");
    expect(toolNames(requests[1])).toContain("history_read_tool_result");

    // O2: projected, with its reference, head and tail; the same bytes in the next request.
    const projected = requests[1].messages.find((m: any) => m.role === "tool").content as string;
    expect(projected.length).toBeLessThanOrEqual(limit + 200);
    expect(projected).toContain('reference "res_1_0_0"');
    expect(projected).toContain("line 000001");
    expect(projected).toContain(`line ${String(lines).padStart(6, "0")}`);
    expect(requests[2].messages.find((m: any) => m.role === "tool").content).toBe(projected);

    // History keeps the whole result.
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const stored = messages.find((m) => m.role === "tool" && m.content.name === "big_result").content.content[0].text as string;
    expect(stored.length).toBe(lines * 89 - 1);

    // O3: each operation, and errors the model can correct.
    const results = messages.filter((m) => m.role === "tool" && m.content.name === "history_read_tool_result").map((m) => m.content);
    expect(results).toHaveLength(6);
    expect(results[0].content[0].text).toContain(`lines: ${lines}`);
    expect(results[1].content[0].text).toMatch(/^\s+100\tline 000100 x+\n\s+101\tline 000101 x+\n\s+102\tline 000102 x+\n/);
    expect(results[2].content[0].text).toContain("59999:\tline 059999");
    expect(results[2].content[0].text).toContain("59998-\tline 059998");
    expect(results.slice(0, 3).every((r) => !r.isError)).toBe(true);
    const errorCodes = await env.query<{ error_code: string }>(
      "select error_code from tool_calls where run_id = $1 and name = 'history_read_tool_result' order by call_index",
      [run.body.id],
    );
    expect(errorCodes.map((row) => row.error_code)).toEqual([null, null, null, "invalid_range", "invalid_pattern", "unknown_reference"]);
  });

  it("O3: without a projected result in the request, history_read_tool_result is not offered", async () => {
    const requests: any[] = [];
    respond = (body) => {
      requests.push(body);
      const answered = body.messages.filter((m: { role: string }) => m.role === "tool").length;
      if (answered === 0) return sse(calls([["big_result", { lines: 10 }]]));
      return sse([textChunk("small"), finishChunk("stop")]);
    };
    const { sessionId } = await client.newSession({ providerProfile: "small" });
    const run = await client.startRun(sessionId, "a small result");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(requests.map(toolNames).some((names) => names.includes("history_read_tool_result"))).toBe(false);
    expect(requests[1].messages.find((m: any) => m.role === "tool").content).not.toContain("res_");
  });
});
