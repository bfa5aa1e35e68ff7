import { afterEach, describe, expect, it } from "vitest";
import { createAnthropicProvider } from "../../src/providers/anthropic-messages.js";
import { createOpenAIChatProvider } from "../../src/providers/openai-chat.js";
import type { ModelProvider, ProviderRequest } from "../../src/providers/provider.js";
import { recordedScript as anthropicRecording, startAnthropicWireServer } from "../helpers/anthropic-wire-server.js";
import { recordedScript as openAIRecording, startOpenAIWireServer } from "../helpers/openai-wire-server.js";
import { collect, expectStartBeforeDeltas, outcomeOf, reasoningOf, type StreamOutcome } from "../helpers/provider-stream.js";
import type { ProviderStreamPart } from "../../src/providers/provider.js";
import { cutRecording, readRecording, recordedBody, type RecordingCut } from "../helpers/wire-server.js";

/**
 * Streams recorded from real servers (test/fixtures/recorded/README.md says where each
 * comes from) replayed byte for byte through the fake wire servers into the real
 * adapters, beside the hand-built chunks of the other provider tests. Every recording is
 * replayed one frame per write, in one write, and cut at seeded random byte offsets
 * (mid-line, mid-separator, mid-character); the parsed outcome must not change.
 */

const request: ProviderRequest = { model: "", messages: [{ role: "user", text: "hi" }], tools: [] };

const cuts: Array<{ title: string; cut: RecordingCut; delayMs?: number }> = [
  { title: "one frame per write", cut: "frames" },
  { title: "one write", cut: "whole" },
  // A pause between writes keeps them apart on the wire instead of coalesced in one read.
  { title: "random cuts, seed 1, paced", cut: { seed: 1, maxBytes: 128 }, delayMs: 1 },
  { title: "random cuts, seed 7", cut: { seed: 7, maxBytes: 7 } },
  { title: "random cuts, seed 2026", cut: { seed: 2026, maxBytes: 200 } },
  { title: "random cuts of 1 to 3 bytes, seed 42", cut: { seed: 42, maxBytes: 3 } },
];

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

type Format = "openai" | "anthropic";

async function providerServing(format: Format, name: string, cut: RecordingCut, delayMs?: number): Promise<ModelProvider> {
  const options = { cut, ...(delayMs !== undefined ? { delayMs } : {}) };
  if (format === "openai") {
    const server = await startOpenAIWireServer(() => openAIRecording(name, options));
    closers.push(server.close);
    return createOpenAIChatProvider({ profile: "recorded", baseUrl: server.baseUrl, model: "recorded-model" });
  }
  const server = await startAnthropicWireServer(() => anthropicRecording(name, options));
  closers.push(server.close);
  return createAnthropicProvider({ profile: "recorded", baseUrl: server.baseUrl, model: "recorded-model" });
}

async function replayParts(format: Format, name: string, cut: RecordingCut, delayMs?: number): Promise<ProviderStreamPart[]> {
  const provider = await providerServing(format, name, cut, delayMs);
  const parts = await collect(provider.stream(request, new AbortController().signal));
  expectStartBeforeDeltas(parts);
  // Exactly one finish, and it is the last part.
  expect(parts.filter((part) => part.type === "finish")).toHaveLength(1);
  expect(parts.at(-1)?.type).toBe("finish");
  return parts;
}

async function replay(format: Format, name: string, cut: RecordingCut, delayMs?: number): Promise<StreamOutcome> {
  return outcomeOf(await replayParts(format, name, cut, delayMs));
}

/** A value of the recording as sent: the concatenated `field` of its lines whose delta has `type`. */
function recordedDeltas(name: string, type: string, field: string): string {
  return readRecording(name)
    .toString("utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line))
    .map((chunk) => chunk.delta ?? chunk.choices?.[0]?.delta)
    .filter((delta) => delta && (type === "*" || delta.type === type) && typeof delta[field] === "string")
    .map((delta) => delta[field] as string)
    .join("");
}

describe("recorded streams: the replay serves the recording byte for byte", () => {
  const recordings: Array<[Format, string]> = [
    ["openai", "openai-chat-gpt-4o-parallel-tool-calls.sse"],
    ["openai", "deepseek-reasoner-tool-call.chunks.txt"],
    ["openai", "openai-compatible-anthropic-tool-index-1.sse"],
    ["anthropic", "anthropic-messages-tool-use.sse"],
    ["anthropic", "anthropic-messages-thinking.chunks.txt"],
    ["anthropic", "anthropic-messages-thinking-tool-use.assembled.chunks.txt"],
  ];

  it.each(recordings)(
    "%s %s: every cut concatenates to the recorded body, and the body arrives unchanged over HTTP",
    async (format, name) => {
      const body = recordedBody(name, format);
      for (const { cut } of cuts) expect(Buffer.concat(cutRecording(body, cut)).equals(body)).toBe(true);
      // The random cuts do split inside frames.
      expect(cutRecording(body, { seed: 42, maxBytes: 3 }).length).toBeGreaterThan(body.length / 3);

      // Served cut into writes of at most 7 bytes, read back whole.
      const cut = { seed: 7, maxBytes: 7 };
      let url: string;
      if (format === "openai") {
        const server = await startOpenAIWireServer(() => openAIRecording(name, { cut }));
        closers.push(server.close);
        url = `${server.baseUrl}/chat/completions`;
      } else {
        const server = await startAnthropicWireServer(() => anthropicRecording(name, { cut }));
        closers.push(server.close);
        url = `${server.baseUrl}/v1/messages`;
      }
      const response = await fetch(url, { method: "POST", body: "{}" });
      expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
      expect(Buffer.from(await response.arrayBuffer()).equals(body)).toBe(true);
    },
  );

  it("the .sse recordings are the committed files themselves; chunk-line recordings keep each JSON line unchanged", () => {
    expect(recordedBody("anthropic-messages-tool-use.sse", "anthropic").equals(readRecording("anthropic-messages-tool-use.sse"))).toBe(
      true,
    );
    const lines = readRecording("anthropic-messages-thinking.chunks.txt").toString("utf8").split("\n");
    const body = recordedBody("anthropic-messages-thinking.chunks.txt", "anthropic").toString("utf8");
    for (const line of lines) expect(body).toContain(`\ndata: ${line}\n\n`);
    expect(recordedBody("deepseek-reasoner-tool-call.chunks.txt", "openai").toString("utf8").endsWith("\n\ndata: [DONE]\n\n")).toBe(true);
  });
});

describe("recorded OpenAI Chat Completions stream: gpt-4o, two parallel tool calls, usage chunk", () => {
  const name = "openai-chat-gpt-4o-parallel-tool-calls.sse";
  const expected: StreamOutcome = {
    text: "",
    toolCalls: [
      {
        index: 0,
        id: "call_JMW1whyEaYG438VE1OIflxA2",
        name: "GetWeatherArgs",
        arguments: '{"city": "Edinburgh", "country": "GB", "units": "c"}',
      },
      { index: 1, id: "call_DNYTawLBoN8fj3KN6qU9N1Ou", name: "get_stock_price", arguments: '{"ticker": "AAPL", "exchange": "NASDAQ"}' },
    ],
    finish: { type: "finish", reason: "tool_calls", stopReason: "tool_calls", usage: { inputTokens: 149, outputTokens: 60 } },
  };

  it.each(cuts)(
    "PR1, T2: both calls in order with their ids, names and exact argument strings; usage and stop reason ($title)",
    async ({ cut, delayMs }) => {
      expect(await replay("openai", name, cut, delayMs)).toEqual(expected);
    },
  );
});

describe("recorded OpenAI-compatible stream: DeepSeek reasoner (reasoning_content, usage: null, usage in the finish chunk)", () => {
  const name = "deepseek-reasoner-tool-call.chunks.txt";
  const expected: StreamOutcome = {
    // The reasoning text is not answer text: nothing of it reaches the text deltas.
    text: "",
    toolCalls: [{ index: 0, id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", name: "weather", arguments: '{"location": "San Francisco"}' }],
    finish: {
      type: "finish",
      reason: "tool_calls",
      stopReason: "tool_calls",
      usage: { inputTokens: 339, outputTokens: 83, cacheReadTokens: 320 },
    },
  };

  it.each(cuts)(
    "PR1, T2, PR5: the tool call, the cached-token usage of the finish chunk; the reasoning apart from the text, kept under its field ($title)",
    async ({ cut, delayMs }) => {
      const parts = await replayParts("openai", name, cut, delayMs);
      expect(outcomeOf(parts)).toEqual(expected);
      const reasoning = recordedDeltas(name, "*", "reasoning_content");
      expect(reasoning.length).toBeGreaterThan(50);
      expect(reasoningOf(parts)).toEqual({
        text: reasoning,
        blocks: [{ type: "reasoning-block", block: { format: "openai-chat", field: "reasoning_content", text: reasoning } }],
      });
    },
  );
});

describe("recorded OpenAI-compatible stream: Anthropic's compatibility endpoint (tool index from 1, no usage, [DONE] without a blank line)", () => {
  const name = "openai-compatible-anthropic-tool-index-1.sse";
  const expected: StreamOutcome = {
    text: "Reading it.",
    toolCalls: [{ index: 0, id: "toolu_sanitized", name: "read_file", arguments: '{"path": "a.txt"}' }],
    finish: { type: "finish", reason: "tool_calls", stopReason: "tool_calls" },
  };

  it.each(cuts)("PR1, T2: text, then the call renumbered from 0 with its exact arguments ($title)", async ({ cut, delayMs }) => {
    expect(await replay("openai", name, cut, delayMs)).toEqual(expected);
  });
});

describe("recorded Anthropic Messages stream: text then tool_use (caller field, spaced ping, no final newline)", () => {
  const name = "anthropic-messages-tool-use.sse";
  const expected: StreamOutcome = {
    text: "I'll check the current weather in Paris for you.",
    toolCalls: [{ index: 0, id: "toolu_01NRLabsLyVHZPKxbKvkfSMn", name: "get_weather", arguments: '{"location": "Paris"}' }],
    finish: {
      type: "finish",
      reason: "tool_calls",
      stopReason: "tool_use",
      usage: { inputTokens: 377, outputTokens: 65, cacheReadTokens: 0, cacheWriteTokens: 0 },
    },
  };

  it.each(cuts)("PR1, T2: the text, the tool call with its exact input JSON, usage and stop reason ($title)", async ({ cut, delayMs }) => {
    expect(await replay("anthropic", name, cut, delayMs)).toEqual(expected);
  });
});

describe("recorded Anthropic Messages stream: extended thinking with a signature, then text", () => {
  const name = "anthropic-messages-thinking.chunks.txt";
  const expected: StreamOutcome = {
    text: "925 ÷ 5 = 185",
    toolCalls: [],
    finish: {
      type: "finish",
      reason: "stop",
      stopReason: "end_turn",
      usage: { inputTokens: 69, outputTokens: 53, cacheReadTokens: 0, cacheWriteTokens: 0 },
    },
  };

  // Thinking streams as reasoning, never as answer text, and its block is kept exactly as sent (PR5).
  it.each(cuts)(
    "PR1, PR5: the answer text and usage; the thinking apart, its block with the recorded text and signature ($title)",
    async ({ cut, delayMs }) => {
      const parts = await replayParts("anthropic", name, cut, delayMs);
      const outcome = outcomeOf(parts);
      expect(outcome).toEqual(expected);
      expect(outcome.text).not.toContain("The previous");
      const thinking = recordedDeltas(name, "thinking_delta", "thinking");
      const signature = recordedDeltas(name, "signature_delta", "signature");
      expect(thinking).toBe("The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185");
      expect(signature).toMatch(/^EvQBCkYI.{300,}$/);
      expect(reasoningOf(parts)).toEqual({
        text: thinking,
        blocks: [{ type: "reasoning-block", block: { format: "anthropic-messages", wire: { type: "thinking", thinking, signature } } }],
      });
    },
  );
});

describe("assembled Anthropic Messages stream: thinking with a signature, then tool_use (lines of the two recordings above)", () => {
  const name = "anthropic-messages-thinking-tool-use.assembled.chunks.txt";

  it.each(cuts)(
    "PR5, T2: the thinking block as recorded, then the tool call with its exact input JSON ($title)",
    async ({ cut, delayMs }) => {
      const parts = await replayParts("anthropic", name, cut, delayMs);
      expect(outcomeOf(parts)).toEqual({
        text: "",
        toolCalls: [{ index: 0, id: "toolu_01NRLabsLyVHZPKxbKvkfSMn", name: "get_weather", arguments: '{"location": "Paris"}' }],
        finish: {
          type: "finish",
          reason: "tool_calls",
          stopReason: "tool_use",
          usage: { inputTokens: 377, outputTokens: 65, cacheReadTokens: 0, cacheWriteTokens: 0 },
        },
      });
      const thinking = recordedDeltas(name, "thinking_delta", "thinking");
      const signature = recordedDeltas(name, "signature_delta", "signature");
      expect(reasoningOf(parts).blocks).toEqual([
        { type: "reasoning-block", block: { format: "anthropic-messages", wire: { type: "thinking", thinking, signature } } },
      ]);
      // The block is complete before the call starts, in the model's order.
      expect(parts.findIndex((part) => part.type === "reasoning-block")).toBeLessThan(
        parts.findIndex((part) => part.type === "tool-call-start"),
      );
    },
  );

  it("is made of lines of the two recordings, unchanged", () => {
    const sources = [
      ...readRecording("anthropic-messages-thinking.chunks.txt").toString("utf8").split("\n"),
      ...readRecording("anthropic-messages-tool-use.sse")
        .toString("utf8")
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => line.slice("data: ".length)),
    ];
    const lines = readRecording(name)
      .toString("utf8")
      .split("\n")
      .filter((line) => line !== "");
    expect(lines.length).toBe(24);
    for (const line of lines) expect(sources).toContain(line);
  });
});
