import { afterEach, describe, expect, it } from "vitest";
import type { ProviderRequest } from "../../src/providers/provider.js";
import { createOpenAIChatProvider } from "../../src/providers/openai-chat.js";
import {
  finishChunk,
  reasoningChunk,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  usageChunk,
  type OpenAIWireServer,
  type WireScript,
} from "../helpers/openai-wire-server.js";
import { argumentsByIndex, collect, expectStartBeforeDeltas } from "../helpers/provider-stream.js";

const done = "data: [DONE]\n\n";
const simpleRequest: ProviderRequest = { model: "local-model", messages: [{ role: "user", text: "hi" }], tools: [] };

let server: OpenAIWireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Starts a server answering every request with `script` and a provider pointed at it. */
async function setup(script: WireScript, options: { apiKey?: string; timeoutMs?: number } = {}) {
  server = await startOpenAIWireServer(() => script);
  // The trailing slash checks that the adapter trims it.
  const baseUrl = `${server.baseUrl}/`;
  const provider = createOpenAIChatProvider({ profile: "local", baseUrl, model: "local-model", ...options });
  return { server, provider };
}

describe("OpenAI Chat Completions provider", () => {
  it("PR1: streams text deltas and one final finish", async () => {
    const { provider } = await setup({
      chunks: [
        { ...textChunk(""), choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
        textChunk("Hel"),
        textChunk("lo"),
        finishChunk("stop"),
        done,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expect(parts).toEqual([
      { type: "text-delta", text: "Hel" },
      { type: "text-delta", text: "lo" },
      { type: "finish", reason: "stop", stopReason: "stop" },
    ]);
  });

  it("T2: tool call arguments split mid-token and mid-escape concatenate to the exact original strings", async () => {
    const first = '{"path": "a\\"b.txt"}';
    const second = '{"name": "caf\\u00e9", "emoji": "🦊", "n": [1, 2.50]}';
    const { provider } = await setup({
      delayMs: 2,
      chunks: [
        textChunk("Reading."),
        toolCallStartChunk(0, "call_a", "read_file"),
        toolArgsChunk(0, '{"pa'),
        toolArgsChunk(0, 'th": "a\\'), // split inside \"
        toolArgsChunk(0, '"b.txt"}'),
        toolCallStartChunk(1, "call_b", "write_file"),
        toolArgsChunk(1, '{"name": "caf\\u0'), // split inside \u00e9
        toolArgsChunk(1, '0e9", "emoji": "🦊", "n": [1, 2.'),
        toolArgsChunk(1, "50]}"),
        finishChunk("tool_calls"),
        done,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));

    expect(parts.filter((p) => p.type === "tool-call-start")).toEqual([
      { type: "tool-call-start", index: 0, id: "call_a", name: "read_file" },
      { type: "tool-call-start", index: 1, id: "call_b", name: "write_file" },
    ]);
    expectStartBeforeDeltas(parts);
    const args = argumentsByIndex(parts);
    expect(args.get(0)).toBe(first);
    expect(args.get(1)).toBe(second);
    // Fragments are passed through, not re-serialized (the \u escape survives as text).
    expect(parts).toContainEqual({ type: "tool-call-delta", index: 1, argumentsDelta: '{"name": "caf\\u0' });
    expect(parts.at(-1)).toEqual({ type: "finish", reason: "tool_calls", stopReason: "tool_calls" });
  });

  it("PR1: SSE frames and UTF-8 characters split across TCP writes are reassembled", async () => {
    const frame = `data: ${JSON.stringify(toolArgsChunk(0, '{"q": "🦊"}'))}\n\n`;
    const bytes = Buffer.from(frame, "utf8");
    const foxAt = bytes.indexOf(Buffer.from("🦊", "utf8"));
    const { provider } = await setup({
      delayMs: 5,
      chunks: [
        toolCallStartChunk(0, "call_a", "search"),
        bytes.subarray(0, foxAt + 2), // ends inside the 4-byte emoji
        bytes.subarray(foxAt + 2),
        `data: ${JSON.stringify(finishChunk("tool_calls")).slice(0, 20)}`,
        `${JSON.stringify(finishChunk("tool_calls")).slice(20)}\n\n`,
        "data: [DO",
        "NE]\n\n",
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expect(argumentsByIndex(parts).get(0)).toBe('{"q": "🦊"}');
    expect(parts.at(-1)).toEqual({ type: "finish", reason: "tool_calls", stopReason: "tool_calls" });
  });

  it("PR1: interleaved tool call indexes are kept apart", async () => {
    const { provider } = await setup({
      chunks: [
        toolCallStartChunk(0, "call_a", "alpha"),
        toolCallStartChunk(1, "call_b", "beta"),
        toolArgsChunk(1, '{"b":'),
        toolArgsChunk(0, '{"a":'),
        toolArgsChunk(1, " 2}"),
        toolArgsChunk(0, " 1}"),
        finishChunk("tool_calls"),
        done,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expectStartBeforeDeltas(parts);
    expect(argumentsByIndex(parts)).toEqual(
      new Map([
        [0, '{"a": 1}'],
        [1, '{"b": 2}'],
      ]),
    );
  });

  it("PR1: buffers arguments sent before the name and accumulates a name sent in pieces", async () => {
    const call = (fields: Record<string, unknown>): object => ({
      ...textChunk(""),
      choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...fields }] }, finish_reason: null }],
    });
    const { provider } = await setup({
      chunks: [
        call({ id: "call_a", type: "function", function: { name: "read_" } }),
        call({ function: { name: "file" } }),
        call({ function: { arguments: '{"path":' } }),
        call({ function: { arguments: ' "x"}' } }),
        call({ index: 1, function: { arguments: "{}" } }),
        call({ index: 1, id: "call_b", function: { name: "list" } }),
        finishChunk("tool_calls"),
        done,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expect(parts).toEqual([
      { type: "tool-call-start", index: 0, id: "call_a", name: "read_file" },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"path":' },
      { type: "tool-call-delta", index: 0, argumentsDelta: ' "x"}' },
      { type: "tool-call-start", index: 1, id: "call_b", name: "list" },
      { type: "tool-call-delta", index: 1, argumentsDelta: "{}" },
      { type: "finish", reason: "tool_calls", stopReason: "tool_calls" },
    ]);
  });

  it("PR1: maps history, system prompt and tools into the request body and sends the API key", async () => {
    const { provider, server } = await setup({ chunks: [finishChunk("stop"), done] }, { apiKey: "sk-test" });
    const request: ProviderRequest = {
      model: "qwen3",
      system: "You are Foya.",
      tools: [
        { name: "list_dir", description: "List a directory", parameters: { type: "object", properties: {} } },
        { name: "read_file", description: "Read a file", parameters: { type: "object", required: ["path"] } },
      ],
      messages: [
        { role: "user", text: "Show me the files" },
        {
          role: "assistant",
          text: "",
          toolCalls: [
            { callId: "call_1", name: "list_dir", argumentsRaw: '{ "path" : "." }' },
            { callId: "call_2", name: "read_file", argumentsRaw: '{"path":"a.png"}' },
          ],
        },
        {
          role: "tool",
          callId: "call_1",
          name: "list_dir",
          isError: false,
          content: [
            { type: "text", text: "a.png" },
            { type: "text", text: "b.txt" },
          ],
        },
        {
          role: "tool",
          callId: "call_2",
          name: "read_file",
          isError: false,
          content: [
            { type: "text", text: "Here it is" },
            { type: "image", mediaType: "image/png", dataBase64: "iVBORw0KGgo=" },
          ],
        },
        { role: "assistant", text: "Done.", toolCalls: [] },
        { role: "user", text: "Thanks" },
      ],
    };
    await collect(provider.stream(request, new AbortController().signal));

    expect(server.requests).toHaveLength(1);
    const { body, headers } = server.requests[0]!;
    expect(headers.authorization).toBe("Bearer sk-test");
    expect(body).toEqual({
      model: "qwen3",
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: "system", content: "You are Foya." },
        { role: "user", content: "Show me the files" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "list_dir", arguments: '{ "path" : "." }' } },
            { id: "call_2", type: "function", function: { name: "read_file", arguments: '{"path":"a.png"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "a.png\nb.txt" },
        { role: "tool", tool_call_id: "call_2", content: "Here it is\n[image (image/png): attached in the next user message]" },
        {
          role: "user",
          content: [
            { type: "text", text: "The image returned by tool call call_2 (read_file):" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
        { role: "assistant", content: "Done." },
        { role: "user", content: "Thanks" },
      ],
      tools: [
        { type: "function", function: request.tools[0] },
        { type: "function", function: request.tools[1] },
      ],
    });
  });

  it("PR1: omits tools and authorization when there are none", async () => {
    const { provider, server } = await setup({ chunks: [finishChunk("stop"), done] });
    await collect(provider.stream(simpleRequest, new AbortController().signal));
    const { body, headers } = server.requests[0]!;
    expect(headers.authorization).toBeUndefined();
    expect(body).not.toHaveProperty("tools");
    expect(body.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("PR1: reports usage from the final usage chunk in the single finish part", async () => {
    const { provider } = await setup({
      chunks: [textChunk("ok"), finishChunk("length"), usageChunk(120, 7), done],
    });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expect(parts.filter((p) => p.type === "finish")).toHaveLength(1);
    expect(parts.at(-1)).toEqual({ type: "finish", reason: "length", stopReason: "length", usage: { inputTokens: 120, outputTokens: 7 } });
  });

  it("PR1: reports prompt_tokens_details.cached_tokens as cache read tokens", async () => {
    const usage = {
      ...usageChunk(120, 7),
      usage: { prompt_tokens: 120, completion_tokens: 7, total_tokens: 127, prompt_tokens_details: { cached_tokens: 96 } },
    };
    const { provider } = await setup({ chunks: [textChunk("ok"), finishChunk("stop"), usage, done] });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expect(parts.at(-1)).toEqual({
      type: "finish",
      reason: "stop",
      stopReason: "stop",
      usage: { inputTokens: 120, outputTokens: 7, cacheReadTokens: 96 },
    });
  });

  it("PR1: maps unknown finish reasons to other and keeps the raw one as the stop reason", async () => {
    const { provider } = await setup({ chunks: [finishChunk("eos_token"), done] });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expect(parts).toEqual([{ type: "finish", reason: "other", stopReason: "eos_token" }]);
  });

  it("PR3: a 429 with Retry-After becomes provider_error with a throttled backoff and the wait; a lost connection a transport one", async () => {
    const { provider } = await setup({
      status: 429,
      body: '{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}',
      headers: { "retry-after": "3", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2500ms" },
    });
    await expect(collect(provider.stream(simpleRequest, new AbortController().signal))).rejects.toMatchObject({
      code: "provider_error",
      message: expect.stringMatching(/^429 .*Rate limit reached/),
      backoff: { kind: "throttled", retryAfterMs: 3000 },
    });
    await server?.close();
    await expect(collect(provider.stream(simpleRequest, new AbortController().signal))).rejects.toMatchObject({
      code: "provider_error",
      backoff: { kind: "transport" },
    });
  });

  it("PR1: an HTTP 500 becomes provider_error with the status and a body excerpt", async () => {
    const { provider } = await setup({ status: 500, body: '{"error":{"message":"model crashed"}}' });
    const failure = collect(provider.stream(simpleRequest, new AbortController().signal));
    await expect(failure).rejects.toMatchObject({ name: "FoyaError", code: "provider_error" });
    await expect(failure).rejects.toThrow(/^500 .*model crashed/);
  });

  it("PR1: an error object in the middle of the stream becomes provider_error", async () => {
    const { provider } = await setup({
      chunks: [textChunk("partial"), { error: { message: "context length exceeded", type: "invalid_request_error" } }],
    });
    await expect(collect(provider.stream(simpleRequest, new AbortController().signal))).rejects.toMatchObject({
      code: "provider_error",
      message: "context length exceeded",
    });
  });

  it("PR1: an unparseable chunk becomes provider_error", async () => {
    const { provider } = await setup({ chunks: [textChunk("a"), "data: {not json\n\n", finishChunk("stop"), done] });
    await expect(collect(provider.stream(simpleRequest, new AbortController().signal))).rejects.toMatchObject({
      code: "provider_error",
    });
  });

  it("PR1: a stream that ends without a finish reason becomes provider_error", async () => {
    const { provider } = await setup({ chunks: [textChunk("cut off"), done] });
    await expect(collect(provider.stream(simpleRequest, new AbortController().signal))).rejects.toMatchObject({
      code: "provider_error",
    });
  });

  it("PR1: a refused connection becomes provider_error with the cause", async () => {
    const { provider, server } = await setup({ chunks: [] });
    await server.close();
    const failure = collect(provider.stream(simpleRequest, new AbortController().signal));
    await expect(failure).rejects.toMatchObject({ code: "provider_error" });
    await expect(failure.catch((error: Error) => error.cause)).resolves.toBeInstanceOf(Error);
  });

  it("PR1: the timeout becomes provider_error", async () => {
    const { provider } = await setup({ delayMs: 2_000, chunks: [textChunk("slow"), finishChunk("stop"), done] }, { timeoutMs: 100 });
    await expect(collect(provider.stream(simpleRequest, new AbortController().signal))).rejects.toMatchObject({
      code: "provider_error",
      message: expect.stringMatching(/100 ms/),
    });
  });

  it("PR1: a caller abort mid-stream rejects with AbortError and closes the connection", async () => {
    const { provider, server } = await setup({
      delayMs: 5_000,
      chunks: [textChunk("first"), textChunk("never"), finishChunk("stop"), done],
    });
    const controller = new AbortController();
    const iterator = provider.stream(simpleRequest, controller.signal)[Symbol.asyncIterator]();

    await expect(iterator.next()).resolves.toEqual({ done: false, value: { type: "text-delta", text: "first" } });
    const pending = iterator.next();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    await expect(server.requests[0]!.outcome).resolves.toBe("aborted");
  });

  it("PR5: reasoning fields stream as reasoning (once, when a server sends both names), are kept under their field, and go back in it; Anthropic blocks are left out", async () => {
    const { provider, server } = await setup({
      chunks: [
        reasoningChunk(""),
        reasoningChunk("Weather in "),
        // Some servers repeat the text under the newer name: kept, not streamed twice.
        {
          ...reasoningChunk("Weather in "),
          choices: [{ index: 0, delta: { reasoning_content: "Paris?", reasoning: "Weather in Paris?" } }],
        },
        toolCallStartChunk(0, "call_1", "weather"),
        toolArgsChunk(0, "{}"),
        finishChunk("tool_calls"),
        done,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, new AbortController().signal));
    expect(parts.filter((part) => part.type === "reasoning-delta" || part.type === "reasoning-block")).toEqual([
      { type: "reasoning-delta", text: "Weather in " },
      { type: "reasoning-delta", text: "Paris?" },
      { type: "reasoning-block", block: { format: "openai-chat", field: "reasoning_content", text: "Weather in Paris?" } },
      { type: "reasoning-block", block: { format: "openai-chat", field: "reasoning", text: "Weather in Paris?" } },
    ]);
    expect(parts.filter((part) => part.type === "text-delta")).toEqual([]);

    await collect(
      provider.stream(
        {
          model: "local-model",
          tools: [],
          messages: [
            { role: "user", text: "weather?" },
            {
              role: "assistant",
              text: "",
              toolCalls: [{ callId: "call_1", name: "weather", argumentsRaw: "{}" }],
              reasoning: [
                { format: "openai-chat", field: "reasoning_content", text: "" },
                { format: "anthropic-messages", wire: { type: "thinking", thinking: "not for this API", signature: "sig" } },
                // A field this adapter does not know is never sent.
                { format: "openai-chat", field: "role", text: "system" },
              ],
            },
            { role: "tool", callId: "call_1", name: "weather", isError: false, content: [{ type: "text", text: "sunny" }] },
          ],
        },
        new AbortController().signal,
      ),
    );
    const assistant = server.requests[1]!.body.messages[1];
    // An empty field goes back too: DeepSeek refuses a tool-call turn without it.
    expect(assistant).toEqual({
      role: "assistant",
      content: null,
      reasoning_content: "",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: "{}" } }],
    });
    expect(JSON.stringify(server.requests[1]!.body)).not.toContain("not for this API");
  });
});
