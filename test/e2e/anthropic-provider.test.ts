import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import {
  blockStop,
  inputJsonDelta,
  messageDelta,
  messageStart,
  messageStop,
  ping,
  recordedScript,
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
import { readRecording } from "../helpers/wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
let server: AnthropicWireServer;
let respond: (body: any) => AnthropicScript;

beforeAll(async () => {
  server = await startAnthropicWireServer(({ body }) => respond(body));
  const providersFile = await writeProvidersFile([
    {
      name: "claude",
      kind: "anthropic-messages",
      baseUrl: server.baseUrl,
      model: "claude-wire",
      apiKeyEnv: "ANTHROPIC_WIRE_KEY",
      maxTokens: 2048,
    },
    {
      name: "claude-thinking",
      kind: "anthropic-messages",
      baseUrl: server.baseUrl,
      model: "claude-wire",
      apiKeyEnv: "ANTHROPIC_WIRE_KEY",
      maxTokens: 2048,
      thinking: { budgetTokens: 1024 },
    },
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile, ANTHROPIC_WIRE_KEY: "sk-ant-wire", FOYA_STEP_ATTEMPTS: "2" });
  await env.startWorker();
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await server?.close();
});

describe("Anthropic Messages provider through the whole loop", () => {
  it("PR1: Anthropic: tool_use blocks streamed with split input_json_delta, results returned as tool_result blocks, usage and stop reasons recorded per step", async () => {
    const first = '{"marker":"pr1-anthropic-a"}';
    const second = '{"marker":"pr1-\\u00e9"}';
    // noop allows no other properties: this call fails validation and returns as is_error.
    const invalid = '{"bogus":1}';
    respond = (body) => {
      const last = body.messages.at(-1);
      const hasResults = last.content.some((block: { type: string }) => block.type === "tool_result");
      if (!hasResults) {
        return {
          events: [
            messageStart({ input: 40, cacheRead: 0, cacheWrite: 1200 }),
            ping,
            textStart(0),
            textDelta(0, "Calling three tools."),
            blockStop(0),
            toolUseStart(1, "toolu_a", "noop"),
            inputJsonDelta(1, first.slice(0, 7)),
            inputJsonDelta(1, first.slice(7)),
            blockStop(1),
            toolUseStart(2, "toolu_b", "noop"),
            inputJsonDelta(2, second.slice(0, 16)), // split inside \u00e9
            inputJsonDelta(2, second.slice(16)),
            blockStop(2),
            toolUseStart(3, "toolu_c", "noop"),
            inputJsonDelta(3, invalid),
            blockStop(3),
            messageDelta("tool_use", 61),
            messageStop,
          ],
        };
      }
      return { events: textResponse("All done.", { usage: { input: 9, cacheRead: 1200, cacheWrite: 80 }, outputTokens: 4 }) };
    };
    const before = server.requests.length;
    const { sessionId } = await client.newSession({ providerProfile: "claude" });
    const run = await client.startRun(sessionId, "use three tools");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");

    const calls = await env.query<{ call_id: string; arguments_raw: string; status: string }>(
      "select call_id, arguments_raw, status from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(calls.map((call) => [call.call_id, call.arguments_raw])).toEqual([
      ["toolu_a", first],
      ["toolu_b", second],
      ["toolu_c", invalid],
    ]);
    expect(calls.slice(0, 2).map((call) => call.status)).toEqual(["succeeded", "succeeded"]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.at(-1).content.text).toBe("All done.");

    // Stop reasons (normalized and raw) and usage, including prompt-cache tokens, per step.
    const steps = await env.query<{ finish_reason: string; stop_reason: string; usage: unknown }>(
      "select finish_reason, stop_reason, usage from steps where run_id = $1 order by index",
      [run.body.id],
    );
    expect(steps).toEqual([
      {
        finish_reason: "tool_calls",
        stop_reason: "tool_use",
        usage: { inputTokens: 1240, outputTokens: 61, cacheReadTokens: 0, cacheWriteTokens: 1200 },
      },
      {
        finish_reason: "stop",
        stop_reason: "end_turn",
        usage: { inputTokens: 1289, outputTokens: 4, cacheReadTokens: 1200, cacheWriteTokens: 80 },
      },
    ]);
    const stepEnds = (await client.events(sessionId)).filter((e) => e.type === "step_end");
    expect(stepEnds.map((e) => [e.data.finishReason, e.data.stopReason, e.data.usage?.outputTokens])).toEqual([
      ["tool_calls", "tool_use", 61],
      ["stop", "end_turn", 4],
    ]);

    // The second request carried the history in the Messages wire format, with the server-side key.
    expect(server.requests.length - before).toBe(2);
    const stepRequests = server.requests.slice(-2);
    expect(JSON.stringify(stepRequests[0]!.body.tools)).toBe(JSON.stringify(stepRequests[1]!.body.tools));
    const request = stepRequests[1]!;
    expect(request.headers["x-api-key"]).toBe("sk-ant-wire");
    expect(request.headers["anthropic-version"]).toBe("2023-06-01");
    expect(request.body).toMatchObject({ model: "claude-wire", max_tokens: 2048, stream: true });
    expect(request.body.tools.find((t: { name: string }) => t.name === "noop")).toMatchObject({ input_schema: { type: "object" } });
    const roles = request.body.messages.map((m: { role: string }) => m.role);
    expect(roles).toEqual(["user", "assistant", "user"]);
    expect(request.body.messages[1].content).toEqual([
      { type: "text", text: "Calling three tools." },
      { type: "tool_use", id: "toolu_a", name: "noop", input: { marker: "pr1-anthropic-a" } },
      { type: "tool_use", id: "toolu_b", name: "noop", input: { marker: "pr1-é" } },
      { type: "tool_use", id: "toolu_c", name: "noop", input: { bogus: 1 } },
    ]);
    const results = request.body.messages[2].content;
    expect(
      results.map((block: { type: string; tool_use_id: string; is_error: boolean }) => [block.type, block.tool_use_id, block.is_error]),
    ).toEqual([
      ["tool_result", "toolu_a", false],
      ["tool_result", "toolu_b", false],
      ["tool_result", "toolu_c", true],
    ]);
    expect(results[0].content).toEqual([{ type: "text", text: "ok" }]);
  });

  it("PR1: Anthropic: an error event mid-stream is retried as a new step attempt, then the run completes", async () => {
    let attempts = 0;
    respond = () => {
      attempts++;
      return attempts === 1
        ? {
            events: [
              messageStart(),
              textStart(0),
              textDelta(0, "Hello, wor"),
              { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
            ],
          }
        : { events: textResponse("Hello, world.") };
    };
    const { sessionId } = await client.newSession({ providerProfile: "claude" });
    const run = await client.startRun(sessionId, "greet");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const [step] = await env.query<{ attempt: number; stop_reason: string }>("select attempt, stop_reason from steps where run_id = $1", [
      run.body.id,
    ]);
    expect(step).toEqual({ attempt: 2, stop_reason: "end_turn" });
    const assistant = (await client.messages(sessionId)).filter((m) => m.role === "assistant");
    expect(assistant.map((m) => m.content.text)).toEqual(["Hello, world."]);
  });

  it("PR1: Anthropic: an HTTP error on every attempt fails the run with provider_error", async () => {
    respond = () => ({ status: 529, body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' });
    const { sessionId } = await client.newSession({ providerProfile: "claude" });
    const run = await client.startRun(sessionId, "hello");
    const done = await client.waitForRun(run.body.id);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("provider_error");
    expect(done.error.message).toContain("529");
  });
});

/** A value of a recording as sent: the concatenation of one string field of its deltas of one type. */
function recordedDeltas(name: string, type: string, field: string): string {
  return readRecording(name)
    .toString("utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line).delta)
    .filter((delta) => delta?.type === type)
    .map((delta) => delta[field] as string)
    .join("");
}

const hasToolResults = (body: any): boolean => body.messages.at(-1).content.some((block: { type: string }) => block.type === "tool_result");

describe("Anthropic extended thinking through the whole loop (PR5)", () => {
  it("PR5: a recorded Anthropic exchange with thinking and tool use: the continuation request carries the same thinking blocks and signatures, byte for byte.", async () => {
    const first = "anthropic-messages-thinking-tool-use.assembled.chunks.txt";
    const second = "anthropic-messages-thinking.chunks.txt";
    respond = (body) => recordedScript(hasToolResults(body) ? second : first, { cut: { seed: 5, maxBytes: 40 } });
    const before = server.requests.length;
    const { sessionId } = await client.newSession({ providerProfile: "claude-thinking" });
    const run = await client.startRun(sessionId, "weather in Paris?");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");

    const requests = server.requests.slice(before);
    expect(requests).toHaveLength(2);
    // Thinking is asked for, below max_tokens, and no temperature is set beside it.
    for (const request of requests) {
      expect(request.body).toMatchObject({ max_tokens: 2048, thinking: { type: "enabled", budget_tokens: 1024 } });
      expect(request.body).not.toHaveProperty("temperature");
    }

    // The continuation carries the thinking block first in the assistant turn, before the tool_use it led to.
    const thinking = recordedDeltas(first, "thinking_delta", "thinking");
    const signature = recordedDeltas(first, "signature_delta", "signature");
    expect(signature.length).toBeGreaterThan(200);
    const continuation = requests[1]!;
    expect(continuation.body.messages.map((message: { role: string }) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(continuation.body.messages[1].content).toEqual([
      { type: "thinking", thinking, signature },
      { type: "tool_use", id: "toolu_01NRLabsLyVHZPKxbKvkfSMn", name: "get_weather", input: { location: "Paris" } },
    ]);
    // Byte for byte on the wire: the text (multi-byte ÷ and line breaks included) and the signature as streamed.
    expect(continuation.rawBody).toContain(
      `"content":[{"type":"thinking","thinking":${JSON.stringify(thinking)},"signature":${JSON.stringify(signature)}},{"type":"tool_use"`,
    );
    // The first request had no history to carry.
    expect(requests[0]!.rawBody).not.toContain('"type":"thinking"');

    // History keeps both steps' blocks as the provider sent them; the answer text has none of it.
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const assistant = messages.filter((message) => message.role === "assistant").map((message) => message.content);
    expect(assistant[0].reasoning).toEqual([{ format: "anthropic-messages", wire: { type: "thinking", thinking, signature } }]);
    expect(assistant[0].text).toBe("");
    expect(assistant[1].text).toBe("925 ÷ 5 = 185");
    expect(assistant[1].reasoning[0].wire.signature).toBe(recordedDeltas(second, "signature_delta", "signature"));

    // Clients saw the thinking as thinking_delta events (coalesced), apart from the text.
    const events = await client.events(sessionId);
    const thinkingOf = (stepIndex: number) =>
      events
        .filter((event) => event.type === "thinking_delta" && event.step?.index === stepIndex)
        .map((event) => event.data.text)
        .join("");
    expect(thinkingOf(0)).toBe(thinking);
    expect(thinkingOf(1)).toBe(recordedDeltas(second, "thinking_delta", "thinking"));
    expect(events.filter((event) => event.type === "thinking_delta").length).toBeLessThan(6);
    expect(
      events
        .filter((event) => event.type === "text_delta")
        .map((event) => event.data.text)
        .join(""),
    ).toBe("925 ÷ 5 = 185");
  });

  it("PR5, X1: a retried step streams its thinking again under its new attempt, keeps only that attempt's blocks, and sends them back with a redacted block's data unchanged", async () => {
    const redacted = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP+/==";
    let firstStepRequests = 0;
    respond = (body) => {
      if (hasToolResults(body)) {
        return {
          events: [
            messageStart(),
            thinkingStart(0),
            thinkingDelta(0, "It worked."),
            signatureDelta(0, "sig-step-1"),
            blockStop(0),
            textStart(1),
            textDelta(1, "Done."),
            blockStop(1),
            messageDelta("end_turn", 9),
            messageStop,
          ],
        };
      }
      firstStepRequests++;
      if (firstStepRequests === 1) {
        // The first attempt thinks a little, then the server gives up: the step is retried.
        return {
          events: [
            messageStart(),
            thinkingStart(0),
            thinkingDelta(0, "Plan A"),
            { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
          ],
        };
      }
      return {
        events: [
          messageStart(),
          thinkingStart(0),
          thinkingDelta(0, "Plan B: "),
          thinkingDelta(0, "call noop."),
          signatureDelta(0, "sig-"),
          signatureDelta(0, "attempt-2"),
          blockStop(0),
          redactedThinkingStart(1, redacted),
          blockStop(1),
          toolUseStart(2, "toolu_pr5", "noop"),
          inputJsonDelta(2, "{}"),
          blockStop(2),
          messageDelta("tool_use", 20),
          messageStop,
        ],
      };
    };
    const before = server.requests.length;
    const { sessionId } = await client.newSession({ providerProfile: "claude-thinking" });
    const run = await client.startRun(sessionId, "call noop");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");

    const requests = server.requests.slice(before);
    expect(requests).toHaveLength(3);
    const kept = [
      { type: "thinking", thinking: "Plan B: call noop.", signature: "sig-attempt-2" },
      { type: "redacted_thinking", data: redacted },
    ];
    expect(requests[2]!.body.messages[1].content).toEqual([...kept, { type: "tool_use", id: "toolu_pr5", name: "noop", input: {} }]);
    expect(requests[2]!.rawBody).toContain(JSON.stringify(kept).slice(1, -1));
    expect(requests[2]!.rawBody).not.toContain("Plan A");
    expect(requests[2]!.body.messages[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_pr5", is_error: false });

    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const [answer] = messages.filter((message) => message.role === "assistant");
    expect(answer.content.reasoning.map((block: { wire: unknown }) => block.wire)).toEqual(kept);

    // Each attempt's thinking is tagged with it; the redacted block is a marker without content.
    const events = await client.events(sessionId);
    const stepZero = events.filter((event) => event.step?.index === 0);
    const thinkingOf = (attempt: number) =>
      stepZero.filter((event) => event.type === "thinking_delta" && event.step.attempt === attempt && !event.data.redacted);
    expect(
      thinkingOf(1)
        .map((event) => event.data.text)
        .join(""),
    ).toBe("Plan A");
    expect(
      thinkingOf(2)
        .map((event) => event.data.text)
        .join(""),
    ).toBe("Plan B: call noop.");
    const markers = stepZero.filter((event) => event.type === "thinking_delta" && event.data.redacted);
    expect(markers.map((event) => [event.step.attempt, event.data])).toEqual([[2, { type: "thinking_delta", text: "", redacted: true }]]);
    // A client that drops what came before the attempt-2 step_start sees attempt 2's thinking only.
    const restart = stepZero.findIndex((event) => event.type === "step_start" && event.data.attempt === 2);
    expect(restart).toBeGreaterThan(stepZero.findIndex((event) => event.type === "thinking_delta" && event.step.attempt === 1));
    expect(
      stepZero
        .slice(restart)
        .filter((event) => event.type === "thinking_delta")
        .map((event) => event.data.text)
        .join(""),
    ).toBe("Plan B: call noop.");
  });
});
