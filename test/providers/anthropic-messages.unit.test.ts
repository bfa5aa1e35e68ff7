import { afterEach, describe, expect, it } from "vitest";
import { createAnthropicProvider, type AnthropicProviderOptions } from "../../src/providers/anthropic-messages.js";
import type { ProviderRequest } from "../../src/providers/provider.js";
import {
  blockStop,
  errorEvent,
  inputJsonDelta,
  messageDelta,
  messageStart,
  messageStop,
  ping,
  sseFrame,
  startAnthropicWireServer,
  textDelta,
  textResponse,
  textStart,
  toolUseStart,
  type AnthropicScript,
  type AnthropicWireServer,
} from "../helpers/anthropic-wire-server.js";
import { argumentsByIndex, collect, expectStartBeforeDeltas } from "../helpers/provider-stream.js";

const simpleRequest: ProviderRequest = { model: "claude-test", messages: [{ role: "user", text: "hi" }], tools: [] };

let server: AnthropicWireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Starts a server answering every request with `script` and a provider pointed at it. */
async function setup(
  script: AnthropicScript,
  options: Partial<Omit<AnthropicProviderOptions, "baseUrl">> & { baseUrl?: (root: string) => string } = {},
) {
  server = await startAnthropicWireServer(() => script);
  const { baseUrl, ...rest } = options;
  const provider = createAnthropicProvider({
    profile: "claude",
    // The trailing slash checks that the adapter trims it.
    baseUrl: baseUrl ? baseUrl(server.baseUrl) : `${server.baseUrl}/`,
    model: "claude-default",
    ...rest,
  });
  return { server, provider };
}

const signal = () => new AbortController().signal;

describe("Anthropic Messages provider", () => {
  it("PR1: Anthropic: streams text deltas and one finish with the stop reason, over POST /v1/messages with the API headers", async () => {
    const { provider, server } = await setup(
      {
        events: [
          messageStart({ input: 25 }),
          ping,
          textStart(0),
          textDelta(0, "Hel"),
          textDelta(0, "lo"),
          blockStop(0),
          messageDelta("end_turn", 12),
          messageStop,
        ],
      },
      { apiKey: "sk-ant-test" },
    );
    const parts = await collect(provider.stream(simpleRequest, signal()));
    expect(parts).toEqual([
      { type: "text-delta", text: "Hel" },
      { type: "text-delta", text: "lo" },
      {
        type: "finish",
        reason: "stop",
        stopReason: "end_turn",
        usage: { inputTokens: 25, outputTokens: 12, cacheReadTokens: 0, cacheWriteTokens: 0 },
      },
    ]);
    const [request] = server.requests;
    expect(request).toMatchObject({ method: "POST", url: "/v1/messages" });
    expect(request!.headers["x-api-key"]).toBe("sk-ant-test");
    expect(request!.headers["anthropic-version"]).toBe("2023-06-01");
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers.authorization).toBeUndefined();
  });

  it("PR1: Anthropic: a base URL that already ends in /v1 is accepted, and no key means no x-api-key header", async () => {
    const { provider, server } = await setup({ events: textResponse("ok") }, { baseUrl: (root) => `${root}/v1` });
    await collect(provider.stream(simpleRequest, signal()));
    expect(server.requests[0]!.url).toBe("/v1/messages");
    expect(server.requests[0]!.headers["x-api-key"]).toBeUndefined();
  });

  it("PR1, T2: Anthropic: two tool_use blocks with JSON split mid-token across input_json_delta events concatenate exactly", async () => {
    const first = '{"path": "a\\"b.txt"}';
    const second = '{"name": "caf\\u00e9", "emoji": "🦊", "n": [1, 2.50]}';
    const { provider } = await setup({
      delayMs: 2,
      events: [
        messageStart(),
        textStart(0),
        textDelta(0, "Reading."),
        blockStop(0),
        toolUseStart(1, "toolu_a", "read_file"),
        inputJsonDelta(1, ""),
        inputJsonDelta(1, '{"pa'),
        inputJsonDelta(1, 'th": "a\\'), // split inside \"
        inputJsonDelta(1, '"b.txt"}'),
        blockStop(1),
        toolUseStart(2, "toolu_b", "write_file"),
        inputJsonDelta(2, '{"name": "caf\\u0'), // split inside \u00e9
        inputJsonDelta(2, '0e9", "emoji": "🦊", "n": [1, 2.'),
        inputJsonDelta(2, "50]}"),
        blockStop(2),
        messageDelta("tool_use", 40),
        messageStop,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, signal()));
    expect(parts.filter((p) => p.type === "tool-call-start")).toEqual([
      { type: "tool-call-start", index: 0, id: "toolu_a", name: "read_file" },
      { type: "tool-call-start", index: 1, id: "toolu_b", name: "write_file" },
    ]);
    expectStartBeforeDeltas(parts);
    const args = argumentsByIndex(parts);
    expect(args.get(0)).toBe(first);
    expect(args.get(1)).toBe(second);
    // Fragments are passed through, not re-serialized.
    expect(parts).toContainEqual({ type: "tool-call-delta", index: 1, argumentsDelta: '{"name": "caf\\u0' });
    expect(parts[0]).toEqual({ type: "text-delta", text: "Reading." });
    expect(parts.at(-1)).toMatchObject({ type: "finish", reason: "tool_calls", stopReason: "tool_use" });
  });

  it("PR1: Anthropic: SSE frames and UTF-8 characters split across TCP writes are reassembled", async () => {
    const bytes = Buffer.from(sseFrame(inputJsonDelta(0, '{"q": "🦊"}')), "utf8");
    const foxAt = bytes.indexOf(Buffer.from("🦊", "utf8"));
    const stop = sseFrame(messageDelta("tool_use", 3));
    const { provider } = await setup({
      delayMs: 5,
      events: [
        messageStart(),
        toolUseStart(0, "toolu_a", "search"),
        bytes.subarray(0, foxAt + 2),
        bytes.subarray(foxAt + 2),
        blockStop(0),
        stop.slice(0, 30),
        stop.slice(30),
        messageStop,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, signal()));
    expect(argumentsByIndex(parts).get(0)).toBe('{"q": "🦊"}');
    expect(parts.at(-1)).toMatchObject({ type: "finish", reason: "tool_calls" });
  });

  it("PR1: Anthropic: a tool_use whose input comes whole in the start block (no deltas) still yields its arguments", async () => {
    const { provider } = await setup({
      events: [
        messageStart(),
        { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_x", name: "list", input: { path: "." } } },
        blockStop(0),
        toolUseStart(1, "toolu_y", "status"),
        blockStop(1),
        messageDelta("tool_use", 3),
        messageStop,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, signal()));
    expect(argumentsByIndex(parts)).toEqual(new Map([[0, '{"path":"."}']]));
    // An argument-less call streams no argument text: the tool layer reads "" as {}.
    expect(parts.filter((p) => p.type === "tool-call-start")).toHaveLength(2);
  });

  it("PR1: Anthropic: maps system, tools, assistant tool_use and tool_result blocks (is_error, images) into alternating turns", async () => {
    const { provider, server } = await setup({ events: textResponse("ok") }, { maxTokens: 1024 });
    const request: ProviderRequest = {
      model: "claude-sonnet",
      system: "You are Foya.",
      tools: [
        { name: "list_dir", description: "List a directory", parameters: { type: "object", properties: {} } },
        { name: "read_file", description: "Read a file", parameters: { type: "object", required: ["path"] } },
      ],
      messages: [
        { role: "user", text: "Show me the files" },
        {
          role: "assistant",
          text: "Looking.",
          toolCalls: [
            { callId: "toolu_1", name: "list_dir", argumentsRaw: '{ "path" : "." }' },
            { callId: "toolu_2", name: "read_file", argumentsRaw: '{"path":"a.png"}' },
            // Broken JSON cannot be sent back verbatim in this API: it goes as {}.
            { callId: "toolu_3", name: "read_file", argumentsRaw: '{"path": "b' },
          ],
        },
        {
          role: "tool",
          callId: "toolu_1",
          name: "list_dir",
          isError: false,
          content: [
            { type: "text", text: "a.png" },
            { type: "text", text: "b.txt" },
          ],
        },
        {
          role: "tool",
          callId: "toolu_2",
          name: "read_file",
          isError: false,
          content: [
            { type: "text", text: "Here it is" },
            { type: "image", mediaType: "image/png", dataBase64: "iVBORw0KGgo=" },
          ],
        },
        { role: "tool", callId: "toolu_3", name: "read_file", isError: true, content: [{ type: "text", text: "invalid arguments" }] },
        // A user message right after the results must join their user turn.
        { role: "user", text: "Also check c.txt" },
        { role: "assistant", text: "Done.", toolCalls: [] },
        { role: "user", text: "Thanks" },
      ],
    };
    await collect(provider.stream(request, signal()));

    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body).toEqual({
      model: "claude-sonnet",
      max_tokens: 1024,
      stream: true,
      // Cache breakpoints (PR4): system, the end of the previous step's request, the last block.
      system: [{ type: "text", text: "You are Foya.", cache_control: { type: "ephemeral" } }],
      tools: [
        { name: "list_dir", description: "List a directory", input_schema: { type: "object", properties: {} } },
        { name: "read_file", description: "Read a file", input_schema: { type: "object", required: ["path"] } },
      ],
      messages: [
        { role: "user", content: [{ type: "text", text: "Show me the files" }] },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Looking." },
            { type: "tool_use", id: "toolu_1", name: "list_dir", input: { path: "." } },
            { type: "tool_use", id: "toolu_2", name: "read_file", input: { path: "a.png" } },
            { type: "tool_use", id: "toolu_3", name: "read_file", input: {} },
          ],
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "toolu_1",
              content: [
                { type: "text", text: "a.png" },
                { type: "text", text: "b.txt" },
              ],
              is_error: false,
            },
            {
              type: "tool_result",
              tool_use_id: "toolu_2",
              content: [
                { type: "text", text: "Here it is" },
                { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
              ],
              is_error: false,
            },
            { type: "tool_result", tool_use_id: "toolu_3", content: [{ type: "text", text: "invalid arguments" }], is_error: true },
            { type: "text", text: "Also check c.txt", cache_control: { type: "ephemeral" } },
          ],
        },
        { role: "assistant", content: [{ type: "text", text: "Done." }] },
        { role: "user", content: [{ type: "text", text: "Thanks", cache_control: { type: "ephemeral" } }] },
      ],
    });
  });

  it("PR1: Anthropic: uses the profile model and default max_tokens, omits empty tools, and leaves out empty assistant turns", async () => {
    const { provider, server } = await setup({ events: textResponse("ok") });
    await collect(
      provider.stream(
        {
          model: "",
          tools: [],
          messages: [
            { role: "user", text: "one" },
            { role: "assistant", text: "", toolCalls: [] },
            { role: "user", text: "two" },
            { role: "assistant", text: "", toolCalls: [{ callId: "toolu_9", name: "noop", argumentsRaw: "" }] },
            { role: "tool", callId: "toolu_9", name: "noop", isError: false, content: [{ type: "text", text: "" }] },
          ],
        },
        signal(),
      ),
    );
    const { body } = server.requests[0]!;
    expect(body.model).toBe("claude-default");
    expect(body.max_tokens).toBe(8192);
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("system");
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "one" },
          { type: "text", text: "two", cache_control: { type: "ephemeral" } },
        ],
      },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_9", name: "noop", input: {} }] },
      // Empty text blocks are rejected by the API; a result without content is allowed.
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_9", is_error: false, cache_control: { type: "ephemeral" } }] },
    ]);
  });

  it("PR2: Anthropic: a profile without parallel tool calls asks for one tool_use per response; the default asks nothing", async () => {
    const tools = [{ name: "noop", description: "does nothing", parameters: { type: "object", properties: {} } }];
    const { provider, server } = await setup({ events: textResponse("ok") });
    const ask = (parallelToolCalls?: boolean) =>
      collect(
        provider.stream(
          { model: "", tools, messages: [{ role: "user", text: "hi" }], ...(parallelToolCalls === undefined ? {} : { parallelToolCalls }) },
          signal(),
        ),
      );
    await ask(false);
    await ask(true);
    await ask();
    expect(server.requests[0]!.body.tool_choice).toEqual({ type: "auto", disable_parallel_tool_use: true });
    expect(server.requests[1]!.body).not.toHaveProperty("tool_choice");
    expect(server.requests[2]!.body).not.toHaveProperty("tool_choice");
  });

  it("PR4: Anthropic: without a system prompt the last tool carries the tools' cache breakpoint, on a copy: the shared rendering stays unmarked", async () => {
    const tools = Object.freeze([
      Object.freeze({ name: "a_tool", description: "first", parameters: { type: "object" } }),
      Object.freeze({ name: "b_tool", description: "second", parameters: { type: "object" } }),
    ]);
    const { provider, server } = await setup({ events: textResponse("ok") });
    const request: ProviderRequest = {
      model: "",
      tools,
      messages: [
        { role: "user", text: "go" },
        { role: "assistant", text: "", toolCalls: [{ callId: "toolu_1", name: "a_tool", argumentsRaw: "{}" }] },
        { role: "tool", callId: "toolu_1", name: "a_tool", isError: false, content: [{ type: "text", text: "done" }] },
      ],
    };
    await collect(provider.stream(request, signal()));
    await collect(provider.stream(request, signal()));
    const [first, second] = server.requests;
    expect(first!.body.tools).toEqual([
      { name: "a_tool", description: "first", input_schema: { type: "object" } },
      { name: "b_tool", description: "second", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } },
    ]);
    expect(first!.body.messages.map((m: { content: object[] }) => m.content.at(-1))).toEqual([
      { type: "text", text: "go", cache_control: { type: "ephemeral" } },
      { type: "tool_use", id: "toolu_1", name: "a_tool", input: {} },
      {
        type: "tool_result",
        tool_use_id: "toolu_1",
        content: [{ type: "text", text: "done" }],
        is_error: false,
        cache_control: { type: "ephemeral" },
      },
    ]);
    // The same request renders to the same bytes again: nothing was marked twice or left over.
    expect(second!.text).toBe(first!.text);
    expect(first!.text.split("cache_control").length - 1).toBe(3);
  });

  it("PR1: Anthropic: reports input, output, cache read and cache write tokens; inputTokens is the whole prompt", async () => {
    const { provider } = await setup({
      events: [
        messageStart({ input: 20, cacheRead: 1000, cacheWrite: 300 }),
        textStart(0),
        textDelta(0, "ok"),
        blockStop(0),
        messageDelta("max_tokens", 77),
        messageStop,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, signal()));
    expect(parts.filter((p) => p.type === "finish")).toEqual([
      {
        type: "finish",
        reason: "length",
        stopReason: "max_tokens",
        usage: { inputTokens: 1320, outputTokens: 77, cacheReadTokens: 1000, cacheWriteTokens: 300 },
      },
    ]);
  });

  it.each([
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["tool_use", "tool_calls"],
    ["max_tokens", "length"],
    ["refusal", "content_filter"],
    ["pause_turn", "other"],
    ["model_context_window_exceeded", "other"],
  ])("PR1: Anthropic: stop reason %s maps to %s and is kept raw", async (stopReason, reason) => {
    const { provider } = await setup({ events: textResponse("x", { stopReason }) });
    const parts = await collect(provider.stream(simpleRequest, signal()));
    expect(parts.at(-1)).toMatchObject({ type: "finish", reason, stopReason });
  });

  it("PR1: Anthropic: an error event in the middle of the stream becomes provider_error with its message", async () => {
    const { provider } = await setup({
      events: [messageStart(), textStart(0), textDelta(0, "partial"), errorEvent("overloaded_error", "Overloaded")],
    });
    await expect(collect(provider.stream(simpleRequest, signal()))).rejects.toMatchObject({
      name: "FoyaError",
      code: "provider_error",
      message: "Overloaded",
    });
  });

  it.each([
    [
      400,
      '{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}',
      /^400 .*roles must alternate/,
    ],
    [529, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', /^529 .*Overloaded/],
    [500, "upstream exploded", /^500 upstream exploded/],
  ])("PR1: Anthropic: HTTP %i becomes provider_error with the status and a body excerpt", async (status, body, pattern) => {
    const { provider } = await setup({ status, body });
    const failure = collect(provider.stream(simpleRequest, signal()));
    await expect(failure).rejects.toMatchObject({ name: "FoyaError", code: "provider_error" });
    await expect(failure).rejects.toThrow(pattern);
  });

  it("PR3: Anthropic: a 529 with its rate-limit reset becomes provider_error with an overloaded backoff and the wait", async () => {
    const resetAt = new Date(Date.now() + 4000).toISOString();
    const { provider } = await setup({
      status: 529,
      body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
      headers: { "anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": resetAt },
    });
    const failure = collect(provider.stream(simpleRequest, signal()));
    await expect(failure).rejects.toMatchObject({ code: "provider_error", backoff: { kind: "overloaded" } });
    const waitMs = await failure.then(
      () => 0,
      (caught: { backoff: { retryAfterMs: number } }) => caught.backoff.retryAfterMs,
    );
    expect(waitMs).toBeGreaterThan(3000);
    expect(waitMs).toBeLessThanOrEqual(4000);
  });

  it("PR1: Anthropic: a stream that ends without a stop reason becomes provider_error", async () => {
    const { provider } = await setup({ events: [messageStart(), textStart(0), textDelta(0, "cut off")] });
    await expect(collect(provider.stream(simpleRequest, signal()))).rejects.toMatchObject({
      code: "provider_error",
      message: expect.stringMatching(/stop reason/),
    });
  });

  it("PR1: Anthropic: an unparseable event and an input_json_delta for a text block become provider_error", async () => {
    const garbage = await setup({ events: [messageStart(), "event: content_block_delta\ndata: {not json\n\n", messageStop] });
    await expect(collect(garbage.provider.stream(simpleRequest, signal()))).rejects.toMatchObject({ code: "provider_error" });
    await garbage.server.close();
    const mismatched = await setup({
      events: [messageStart(), textStart(0), inputJsonDelta(0, "{}"), messageDelta("end_turn", 1), messageStop],
    });
    await expect(collect(mismatched.provider.stream(simpleRequest, signal()))).rejects.toMatchObject({ code: "provider_error" });
  });

  it("PR1: Anthropic: a refused connection and the timeout become provider_error", async () => {
    const refused = await setup({ events: [] });
    await refused.server.close();
    const failure = collect(refused.provider.stream(simpleRequest, signal()));
    await expect(failure).rejects.toMatchObject({ code: "provider_error" });
    await expect(failure.catch((error: Error) => error.cause)).resolves.toBeInstanceOf(Error);

    const slow = await setup({ delayMs: 2_000, events: textResponse("slow") }, { timeoutMs: 100 });
    await expect(collect(slow.provider.stream(simpleRequest, signal()))).rejects.toMatchObject({
      code: "provider_error",
      message: expect.stringMatching(/100 ms/),
    });
  });

  it("PR1: Anthropic: a caller abort mid-stream rejects with AbortError and closes the connection", async () => {
    // The opening events go in one write, so only the wait before "never" is long.
    const opening = [messageStart(), textStart(0), textDelta(0, "first")].map(sseFrame).join("");
    const { provider, server } = await setup({ delayMs: 5_000, events: [opening, textDelta(0, "never"), messageStop] });
    const controller = new AbortController();
    const iterator = provider.stream(simpleRequest, controller.signal)[Symbol.asyncIterator]();
    await expect(iterator.next()).resolves.toEqual({ done: false, value: { type: "text-delta", text: "first" } });
    const pending = iterator.next();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    await expect(server.requests[0]!.outcome).resolves.toBe("aborted");
  });
});
