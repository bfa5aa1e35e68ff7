import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import {
  recordedScript as anthropicRecording,
  startAnthropicWireServer,
  textResponse,
  type AnthropicScript,
  type AnthropicWireServer,
} from "../helpers/anthropic-wire-server.js";
import {
  finishChunk,
  recordedScript as openAIRecording,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  usageChunk,
  type OpenAIWireServer,
  type WireScript,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/**
 * Streams recorded from real servers (test/fixtures/recorded) as the first model step of a
 * whole run, API and worker, cut at random byte offsets. The recorded calls name tools this
 * server does not have, so each comes back as an `unknown_tool` error result and the
 * (hand-built) second step ends the run: what is checked is what the recorded stream became.
 */

let env: TestEnv;
let client: ApiClient;
let openai: OpenAIWireServer;
let anthropic: AnthropicWireServer;
let respondOpenAI: (body: any) => WireScript;
let respondAnthropic: (body: any) => AnthropicScript;

beforeAll(async () => {
  openai = await startOpenAIWireServer(({ body }) => respondOpenAI(body));
  anthropic = await startAnthropicWireServer(({ body }) => respondAnthropic(body));
  const providersFile = await writeProvidersFile([
    { name: "recorded-openai", kind: "openai-chat", baseUrl: openai.baseUrl, model: "gpt-4o-2024-08-06" },
    { name: "recorded-anthropic", kind: "anthropic-messages", baseUrl: anthropic.baseUrl, model: "claude-sonnet-4-20250514" },
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile });
  await env.startWorker();
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await openai?.close();
  await anthropic?.close();
});

async function callsAndSteps(runId: string) {
  const calls = await env.query<{ call_id: string; name: string; arguments_raw: string; status: string; error_code: string | null }>(
    "select call_id, name, arguments_raw, status, error_code from tool_calls where run_id = $1 order by call_index",
    [runId],
  );
  const steps = await env.query<{ stop_reason: string; usage: unknown }>(
    "select stop_reason, usage from steps where run_id = $1 order by index",
    [runId],
  );
  return { calls, steps };
}

describe("recorded provider streams through the whole loop", () => {
  it("PR1, T2: a recorded gpt-4o stream with two parallel tool calls becomes two calls, in order, with the exact argument strings", async () => {
    const weather = '{"city": "Edinburgh", "country": "GB", "units": "c"}';
    const stock = '{"ticker": "AAPL", "exchange": "NASDAQ"}';
    respondOpenAI = (body) =>
      body.messages.some((m: { role: string }) => m.role === "tool")
        ? sseScript([textChunk("No such tools."), finishChunk("stop"), usageChunk(200, 4)])
        : openAIRecording("openai-chat-gpt-4o-parallel-tool-calls.sse", { cut: { seed: 3, maxBytes: 40 }, delayMs: 1 });
    const { sessionId } = await client.newSession({ providerProfile: "recorded-openai" });
    const run = await client.startRun(sessionId, "What's the weather like in Edinburgh? What's the price of AAPL?");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");

    const { calls, steps } = await callsAndSteps(run.body.id);
    expect(calls).toEqual([
      {
        call_id: "call_JMW1whyEaYG438VE1OIflxA2",
        name: "GetWeatherArgs",
        arguments_raw: weather,
        status: "failed",
        error_code: "unknown_tool",
      },
      {
        call_id: "call_DNYTawLBoN8fj3KN6qU9N1Ou",
        name: "get_stock_price",
        arguments_raw: stock,
        status: "failed",
        error_code: "unknown_tool",
      },
    ]);
    expect(steps).toEqual([
      { stop_reason: "tool_calls", usage: { inputTokens: 149, outputTokens: 60 } },
      { stop_reason: "stop", usage: { inputTokens: 200, outputTokens: 4 } },
    ]);
    expectValidHistory(await client.messages(sessionId));
    // The next request gave the model its own calls back verbatim, answered in order.
    const next = openai.requests.at(-1)!.body;
    const assistant = next.messages.find((m: { role: string }) => m.role === "assistant");
    expect(assistant.tool_calls.map((c: any) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ["call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", weather],
      ["call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", stock],
    ]);
    expect(next.messages.filter((m: { role: string }) => m.role === "tool").map((m: { tool_call_id: string }) => m.tool_call_id)).toEqual([
      "call_JMW1whyEaYG438VE1OIflxA2",
      "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    ]);
  });

  it("PR1, T2: a recorded Anthropic stream with text and a tool_use block becomes the text and one call with the exact input JSON", async () => {
    respondAnthropic = (body) =>
      body.messages.at(-1).content.some((block: { type: string }) => block.type === "tool_result")
        ? { events: textResponse("No such tool.", { usage: { input: 400 }, outputTokens: 5 }) }
        : anthropicRecording("anthropic-messages-tool-use.sse", { cut: { seed: 5, maxBytes: 40 }, delayMs: 1 });
    const { sessionId } = await client.newSession({ providerProfile: "recorded-anthropic" });
    const run = await client.startRun(sessionId, "What's the weather in Paris?");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");

    const { calls, steps } = await callsAndSteps(run.body.id);
    expect(calls).toEqual([
      {
        call_id: "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        name: "get_weather",
        arguments_raw: '{"location": "Paris"}',
        status: "failed",
        error_code: "unknown_tool",
      },
    ]);
    expect(steps).toEqual([
      { stop_reason: "tool_use", usage: { inputTokens: 377, outputTokens: 65, cacheReadTokens: 0, cacheWriteTokens: 0 } },
      { stop_reason: "end_turn", usage: { inputTokens: 400, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    ]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const assistant = messages.find((m: any) => m.role === "assistant");
    expect(assistant.content.text).toBe("I'll check the current weather in Paris for you.");
    // The tool_use block went back with the input the model streamed, parsed.
    const next = anthropic.requests.at(-1)!.body;
    const toolUse = next.messages
      .flatMap((m: { content: Array<{ type: string }> }) => m.content)
      .find((b: { type: string }) => b.type === "tool_use");
    expect(toolUse).toEqual({ type: "tool_use", id: "toolu_01NRLabsLyVHZPKxbKvkfSMn", name: "get_weather", input: { location: "Paris" } });
  });
});
