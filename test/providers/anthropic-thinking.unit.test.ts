import { afterEach, describe, expect, it } from "vitest";
import type { ReasoningBlock } from "../../src/core/history.js";
import { createAnthropicProvider, type AnthropicProviderOptions } from "../../src/providers/anthropic-messages.js";
import type { ProviderRequest } from "../../src/providers/provider.js";
import {
  blockStop,
  inputJsonDelta,
  messageDelta,
  messageStart,
  messageStop,
  redactedThinkingStart,
  signatureDelta,
  startAnthropicWireServer,
  textDelta,
  textResponse,
  textStart,
  thinkingDelta,
  thinkingStart,
  toolUseStart,
  type AnthropicScript,
  type AnthropicWireServer,
} from "../helpers/anthropic-wire-server.js";
import { collect } from "../helpers/provider-stream.js";

/** Extended thinking on the Anthropic adapter (SPEC PR5): what it parses, what it sends back. */

let server: AnthropicWireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(script: AnthropicScript, options: Partial<Omit<AnthropicProviderOptions, "baseUrl">> = {}) {
  server = await startAnthropicWireServer(() => script);
  const provider = createAnthropicProvider({ profile: "claude", baseUrl: server.baseUrl, model: "claude-default", ...options });
  return { server, provider };
}

const signal = () => new AbortController().signal;
const simpleRequest: ProviderRequest = { model: "", messages: [{ role: "user", text: "hi" }], tools: [] };

// Multi-byte text split across deltas, a signature in two pieces, and encrypted data with JSON-significant characters.
const thought = "Let me think: 925 ÷ 5 = 185 🦊";
const signature = "EvQBCkYICxgCKkAx+/==";
const redactedData = 'EmwKAhgBEgy3va3pzix/LafPsn4a"\\u00e9+/=';

describe("Anthropic extended thinking", () => {
  it("PR5: Anthropic: thinking deltas stream as reasoning, each block complete at its stop with the exact text and signature; a redacted block comes whole, marked", async () => {
    const { provider } = await setup({
      events: [
        messageStart(),
        thinkingStart(0),
        thinkingDelta(0, thought.slice(0, 14)),
        thinkingDelta(0, ""),
        thinkingDelta(0, thought.slice(14)),
        signatureDelta(0, signature.slice(0, 9)),
        signatureDelta(0, signature.slice(9)),
        blockStop(0),
        redactedThinkingStart(1, redactedData),
        blockStop(1),
        textStart(2),
        textDelta(2, "Calling."),
        blockStop(2),
        toolUseStart(3, "toolu_1", "noop"),
        inputJsonDelta(3, "{}"),
        blockStop(3),
        messageDelta("tool_use", 30),
        messageStop,
      ],
    });
    const parts = await collect(provider.stream(simpleRequest, signal()));
    expect(parts.slice(0, 4)).toEqual([
      { type: "reasoning-delta", text: thought.slice(0, 14) },
      { type: "reasoning-delta", text: thought.slice(14) },
      { type: "reasoning-block", block: { format: "anthropic-messages", wire: { type: "thinking", thinking: thought, signature } } },
      {
        type: "reasoning-block",
        block: { format: "anthropic-messages", wire: { type: "redacted_thinking", data: redactedData } },
        redacted: true,
      },
    ]);
    // Reasoning never reaches the answer text.
    expect(parts.filter((part) => part.type === "text-delta")).toEqual([{ type: "text-delta", text: "Calling." }]);
    expect(parts.at(-1)).toMatchObject({ type: "finish", reason: "tool_calls" });
  });

  it("PR5: Anthropic: a profile with thinking asks for it with its budget and never sets temperature; without, nothing is asked", async () => {
    const thinking = await setup({ events: textResponse("ok") }, { maxTokens: 4096, thinking: { budgetTokens: 2048 } });
    await collect(thinking.provider.stream(simpleRequest, signal()));
    const { body } = thinking.server.requests[0]!;
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    expect(body.max_tokens).toBe(4096);
    expect(body).not.toHaveProperty("temperature");
    await thinking.server.close();

    const plain = await setup({ events: textResponse("ok") });
    await collect(plain.provider.stream(simpleRequest, signal()));
    expect(plain.server.requests[0]!.body).not.toHaveProperty("thinking");
  });

  it("PR5: Anthropic: a thinking budget not below max_tokens is refused when the provider is made", () => {
    expect(() =>
      createAnthropicProvider({
        profile: "claude",
        baseUrl: "http://127.0.0.1:9",
        model: "m",
        maxTokens: 2048,
        thinking: { budgetTokens: 2048 },
      }),
    ).toThrow(expect.objectContaining({ code: "provider_config" }));
  });

  it("PR5: Anthropic: history's thinking blocks go back first in their assistant turn, unchanged and in order; other formats' reasoning is left out", async () => {
    const reasoning: ReasoningBlock[] = [
      // Keys in storage order (Postgres jsonb sorts them): the request still has the API's order.
      { format: "anthropic-messages", wire: { signature, thinking: thought, type: "thinking" } as never },
      { format: "openai-chat", field: "reasoning_content", text: "not for this API" },
      { format: "anthropic-messages", wire: { data: redactedData, type: "redacted_thinking" } as never },
    ];
    const { provider, server } = await setup({ events: textResponse("ok") }, { thinking: { budgetTokens: 1024 } });
    await collect(
      provider.stream(
        {
          model: "",
          tools: [],
          messages: [
            { role: "user", text: "go" },
            { role: "assistant", text: "Calling.", toolCalls: [{ callId: "toolu_1", name: "noop", argumentsRaw: "{}" }], reasoning },
            { role: "tool", callId: "toolu_1", name: "noop", isError: false, content: [{ type: "text", text: "ok" }] },
            // Thinking alone, with no answer, is no turn to send.
            { role: "assistant", text: "", toolCalls: [], reasoning: reasoning.slice(0, 1) },
          ],
        },
        signal(),
      ),
    );
    const { body } = server.requests[0]!;
    expect(body.messages.map((message: { role: string }) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(body.messages[1].content).toEqual([
      { type: "thinking", thinking: thought, signature },
      { type: "redacted_thinking", data: redactedData },
      { type: "text", text: "Calling." },
      { type: "tool_use", id: "toolu_1", name: "noop", input: {} },
    ]);
    // Byte for byte, keys in the order the API sent them.
    const raw = JSON.stringify(body.messages[1].content.slice(0, 2));
    expect(raw).toBe(
      `[{"type":"thinking","thinking":${JSON.stringify(thought)},"signature":${JSON.stringify(signature)}},` +
        `{"type":"redacted_thinking","data":${JSON.stringify(redactedData)}}]`,
    );
    expect(JSON.stringify(body)).not.toContain("not for this API");
  });

  it("PR5: Anthropic: a thinking or signature delta for a block that is not thinking, and a redacted block without data, become provider_error", async () => {
    const onText = await setup({ events: [messageStart(), textStart(0), thinkingDelta(0, "x"), messageDelta("end_turn", 1), messageStop] });
    await expect(collect(onText.provider.stream(simpleRequest, signal()))).rejects.toMatchObject({ code: "provider_error" });
    await onText.server.close();
    const onRedacted = await setup({
      events: [messageStart(), redactedThinkingStart(0, "abc"), signatureDelta(0, "x"), messageDelta("end_turn", 1), messageStop],
    });
    await expect(collect(onRedacted.provider.stream(simpleRequest, signal()))).rejects.toMatchObject({ code: "provider_error" });
    await onRedacted.server.close();
    const noData = await setup({
      events: [
        messageStart(),
        { type: "content_block_start", index: 0, content_block: { type: "redacted_thinking" } },
        messageDelta("end_turn", 1),
        messageStop,
      ],
    });
    await expect(collect(noData.provider.stream(simpleRequest, signal()))).rejects.toMatchObject({ code: "provider_error" });
  });
});
