import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import {
  finishChunk,
  recordedScript,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  usageChunk,
  type OpenAIWireServer,
  type WireScript,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";
import { readRecording } from "../helpers/wire-server.js";

let env: TestEnv;
let client: ApiClient;
let server: OpenAIWireServer;
let respond: (body: any) => WireScript;

beforeAll(async () => {
  server = await startOpenAIWireServer(({ body }) => respond(body));
  const providersFile = await writeProvidersFile([
    { name: "wire", kind: "openai-chat", baseUrl: server.baseUrl, model: "wire-model", apiKeyEnv: "WIRE_KEY" },
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile, WIRE_KEY: "sk-wire", FOYA_STEP_ATTEMPTS: "2" });
  await env.startWorker();
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await server?.close();
});

const sse = sseScript;

describe("OpenAI-compatible provider through the whole loop", () => {
  it("PR1, R2: two tool calls in one streamed response, arguments split mid-token, run to completion over real HTTP", async () => {
    const first = '{"marker":"pr1-a"}';
    const second = '{"marker":"pr1-\\u00e9"}';
    respond = (body) => {
      const toolMessages = body.messages.filter((m: { role: string }) => m.role === "tool");
      if (toolMessages.length === 0) {
        return sse([
          textChunk("Calling two tools."),
          toolCallStartChunk(0, "call_a", "noop"),
          toolArgsChunk(0, first.slice(0, 5)),
          toolCallStartChunk(1, "call_b", "noop"),
          toolArgsChunk(0, first.slice(5)),
          toolArgsChunk(1, second.slice(0, 13)),
          toolArgsChunk(1, second.slice(13)),
          finishChunk("tool_calls"),
          usageChunk(12, 7),
        ]);
      }
      // A server with a prompt cache reports the cached part of the prompt in the details.
      const cached = {
        ...usageChunk(30, 2),
        usage: { prompt_tokens: 30, completion_tokens: 2, total_tokens: 32, prompt_tokens_details: { cached_tokens: 24 } },
      };
      return sse([textChunk("Both "), textChunk("done."), finishChunk("stop"), cached]);
    };
    const { sessionId } = await client.newSession({ providerProfile: "wire" });
    const run = await client.startRun(sessionId, "use two tools");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");

    const calls = await env.query<{ call_id: string; arguments_raw: string; status: string }>(
      "select call_id, arguments_raw, status from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(calls).toEqual([
      { call_id: "call_a", arguments_raw: first, status: "succeeded" },
      { call_id: "call_b", arguments_raw: second, status: "succeeded" },
    ]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.at(-1).content.text).toBe("Both done.");
    const steps = await env.query<{ stop_reason: string; usage: unknown }>(
      "select stop_reason, usage from steps where run_id = $1 order by index",
      [run.body.id],
    );
    expect(steps).toEqual([
      { stop_reason: "tool_calls", usage: { inputTokens: 12, outputTokens: 7 } },
      { stop_reason: "stop", usage: { inputTokens: 30, outputTokens: 2, cacheReadTokens: 24 } },
    ]);

    // R2: both steps sent the same tool set, byte for byte.
    const stepRequests = server.requests.slice(-2);
    expect(JSON.stringify(stepRequests[0]!.body.tools)).toBe(JSON.stringify(stepRequests[1]!.body.tools));
    // The worker's pool of this profile sent the second step on the first step's connection (keep-alive).
    expect(stepRequests[1]!.connection).toBe(stepRequests[0]!.connection);
    // The second request carried the history in the wire format, with the server-side key.
    const request = server.requests.at(-1)!;
    expect(request.headers.authorization).toBe("Bearer sk-wire");
    expect(request.body.model).toBe("wire-model");
    expect(request.body.stream).toBe(true);
    expect(request.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      "agent",
      "bash",
      "command_cancel",
      "command_output",
      "command_status",
      "context_echo",
      "delete",
      "edit",
      "end_batch",
      "grep",
      "late_progress",
      "list",
      "make_image",
      "marker_sleep",
      "net_probe",
      "noop",
      "probe",
      "read",
      "rich_result",
      "show_diff",
      "update_tasks",
      "web_fetch",
      "write",
    ]);
    const assistant = request.body.messages.find((m: { role: string }) => m.role === "assistant");
    expect(assistant.tool_calls.map((c: { function: { arguments: string } }) => c.function.arguments)).toEqual([first, second]);
    expect(
      request.body.messages.filter((m: { role: string }) => m.role === "tool").map((m: { tool_call_id: string }) => m.tool_call_id),
    ).toEqual(["call_a", "call_b"]);
  });

  it("X1: a model step that fails mid-stream is retried as a new attempt; clients can drop the first attempt's output", async () => {
    let calls = 0;
    respond = () => {
      calls++;
      return calls === 1
        ? { chunks: [textChunk("Hello, wor"), 'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n'] }
        : sse([textChunk("Hello, "), textChunk("world."), finishChunk("stop")]);
    };
    const { sessionId } = await client.newSession({ providerProfile: "wire" });
    const run = await client.startRun(sessionId, "greet");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const events = await client.events(sessionId);
    const deltas = events.filter((e) => e.type === "text_delta");
    expect(deltas.map((e) => e.step.attempt)).toContain(1);
    const latest = Math.max(...events.filter((e) => e.type === "step_start").map((e) => e.step.attempt));
    expect(latest).toBe(2);
    // The client rule: keep only the latest attempt of each step.
    expect(
      deltas
        .filter((e) => e.step.attempt === latest)
        .map((e) => e.data.text)
        .join(""),
    ).toBe("Hello, world.");
    const assistant = (await client.messages(sessionId)).filter((m) => m.role === "assistant");
    expect(assistant.map((m) => m.content.text)).toEqual(["Hello, world."]);
  });

  it("PR1: a provider that keeps failing is retried as a new step attempt, then the run fails with the reason", async () => {
    respond = () => ({ status: 500, body: "upstream exploded" });
    const before = server.requests.length;
    const { sessionId } = await client.newSession({ providerProfile: "wire" });
    const run = await client.startRun(sessionId, "hello");
    const done = await client.waitForRun(run.body.id);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("provider_error");
    expect(done.error.message).toContain("500");
    expect(server.requests.length - before).toBe(2);
    const events = await client.events(sessionId);
    expect(events.filter((e) => e.type === "step_start").map((e) => e.data.attempt)).toEqual([1, 2]);
    expect(events.at(-1).data).toMatchObject({ type: "run_end", status: "failed" });
  });

  it("PR5: a recorded DeepSeek reasoner exchange: the reasoning streams as thinking_delta, is kept under reasoning_content and sent back in it with the tool call", async () => {
    const name = "deepseek-reasoner-tool-call.chunks.txt";
    const reasoning = readRecording(name)
      .toString("utf8")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line).choices[0]?.delta?.reasoning_content)
      .filter((text) => typeof text === "string")
      .join("");
    respond = (body) =>
      body.messages.some((m: { role: string }) => m.role === "tool")
        ? sse([textChunk("Sunny."), finishChunk("stop")])
        : recordedScript(name, { cut: { seed: 3, maxBytes: 64 } });
    const before = server.requests.length;
    const { sessionId } = await client.newSession({ providerProfile: "wire" });
    const run = await client.startRun(sessionId, "weather in San Francisco?");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");

    const continuation = server.requests.slice(before)[1]!;
    const assistant = continuation.body.messages.find((m: { role: string }) => m.role === "assistant");
    expect(assistant).toMatchObject({
      content: null,
      reasoning_content: reasoning,
      tool_calls: [{ id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", function: { name: "weather", arguments: '{"location": "San Francisco"}' } }],
    });
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.find((m) => m.role === "assistant").content.reasoning).toEqual([
      { format: "openai-chat", field: "reasoning_content", text: reasoning },
    ]);
    const events = await client.events(sessionId);
    expect(
      events
        .filter((e) => e.type === "thinking_delta")
        .map((e) => e.data.text)
        .join(""),
    ).toBe(reasoning);
    expect(
      events
        .filter((e) => e.type === "text_delta")
        .map((e) => e.data.text)
        .join(""),
    ).toBe("Sunny.");
  });
});
