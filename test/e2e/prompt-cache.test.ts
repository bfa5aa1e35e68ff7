import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import {
  blockStop,
  inputJsonDelta,
  messageDelta,
  messageStart,
  messageStop,
  startAnthropicWireServer,
  textResponse,
  toolUseStart,
  type AnthropicScript,
  type AnthropicWireServer,
  type StartUsage,
} from "../helpers/anthropic-wire-server.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  usageChunk,
  type OpenAIWireServer,
  type WireScript,
} from "../helpers/openai-wire-server.js";
import { sample } from "../helpers/prometheus-text.js";
import type { RecordedRequest } from "../helpers/wire-server.js";
import { createTestEnv, repoRoot, testToolsModule, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/**
 * SPEC PR4 across real processes' worth of machinery (API, BullMQ worker, Postgres) and real
 * HTTP: the fake provider servers record every request body as sent, so the test compares the
 * bytes a prompt cache would compare.
 */

const metricsToken = "prompt-cache-metrics-token-0123456789";
let env: TestEnv;
let client: ApiClient;
let anthropic: AnthropicWireServer;
let openai: OpenAIWireServer;

type Call = [name: string, args: Record<string, unknown>];

/**
 * What the model calls at each step of a 20-step run; step 19 answers text. Tools join mid-run
 * three times: history_read_tool_result at step 2 (step 1's result is projected), weather_lookup
 * at step 3 and the calendar tools at step 5 (tool_search activations). Images come at steps 0, 3, 6 ...
 */
const plan: Call[][] = [
  [
    ["noop", {}],
    ["make_image", {}],
  ],
  [["big_result", { lines: 400, width: 100 }]],
  [["tool_search", { query: "weather forecast for a city" }]],
  [
    ["weather_lookup", { city: "Oslo" }],
    ["make_image", { copies: 2 }],
  ],
  [["tool_search", { query: "calendar events" }]],
  [["calendar_list_events", { from: "today" }]],
  ...Array.from({ length: 13 }, (_, i): Call[] => (i % 3 === 0 ? [["make_image", {}]] : [["noop", { marker: `step-${i + 6}` }]])),
];
const steps = plan.length + 1;

/** The step a request is for: one assistant turn per step before it. */
const stepOf = (body: { messages: Array<{ role: string }> }): number => body.messages.filter((m) => m.role === "assistant").length;

/** Cache counts the fake servers report for step n, so sums can be checked. */
const anthropicUsage = (step: number): StartUsage => ({ input: 20, cacheRead: 1000 * step, cacheWrite: 100 + step });
const openaiCached = (step: number): number => 500 * step;

function anthropicAnswer(body: any): AnthropicScript {
  const step = stepOf(body);
  const calls = plan[step];
  const usage = anthropicUsage(step);
  if (!calls) return { events: textResponse("All done.", { usage, outputTokens: 3 }) };
  return {
    events: [
      messageStart(usage),
      ...calls.flatMap(([name, args], index) => [
        toolUseStart(index, `toolu_${step}_${index}`, name),
        inputJsonDelta(index, JSON.stringify(args)),
        blockStop(index),
      ]),
      messageDelta("tool_use", 7),
      messageStop,
    ],
  };
}

function openaiAnswer(body: any): WireScript {
  const step = stepOf(body);
  const calls = plan[step];
  const usage = usageChunk(2000 + step, 7, openaiCached(step));
  if (!calls) return sseScript([textChunk("All done."), finishChunk("stop"), usage]);
  return sseScript([
    ...calls.flatMap(([name, args], index) => [
      toolCallStartChunk(index, `call_${step}_${index}`, name),
      toolArgsChunk(index, JSON.stringify(args)),
    ]),
    finishChunk("tool_calls"),
    usage,
  ]);
}

beforeAll(async () => {
  anthropic = await startAnthropicWireServer(({ body }) => anthropicAnswer(body));
  openai = await startOpenAIWireServer(({ body }) => openaiAnswer(body));
  // A small window makes big_result's 40,000 characters a projected result (limit 6,400).
  const capabilities = { imageInput: true, contextWindow: 32_000 };
  const providersFile = await writeProvidersFile([
    { name: "claude", kind: "anthropic-messages", baseUrl: anthropic.baseUrl, model: "claude-wire", capabilities },
    { name: "gpt", kind: "openai-chat", baseUrl: openai.baseUrl, model: "gpt-wire", capabilities },
  ]);
  env = await createTestEnv({
    FOYA_PROVIDERS_FILE: providersFile,
    FOYA_METRICS_TOKEN: metricsToken,
    FOYA_TOOL_MODULES: [testToolsModule, "test/fixtures/deferred-tools.ts", "test/fixtures/context-tools.ts"]
      .map((file) => path.resolve(repoRoot, file))
      .join(","),
  });
  await env.startWorker();
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await anthropic?.close();
  await openai?.close();
});

/** Runs the 20-step plan in a new session of `profile`; answers the requests the run sent, in order. */
async function runPlan(profile: string, server: { requests: RecordedRequest[] }): Promise<{ runId: string; requests: RecordedRequest[] }> {
  const before = server.requests.length;
  const { sessionId } = await client.newSession({ providerProfile: profile, systemPrompt: "You are the prompt-cache test agent." });
  const run = await client.startRun(sessionId, "work through the plan");
  expect((await client.waitForRun(run.body.id, 120_000)).status).toBe("completed");
  expectValidHistory(await client.messages(sessionId));
  const requests = server.requests.slice(before);
  expect(requests.map((request) => stepOf(request.body))).toEqual(Array.from({ length: steps }, (_, step) => step));
  return { runId: run.body.id, requests };
}

const cacheMark = ',"cache_control":{"type":"ephemeral"}';

/** The body as sent, less its cache marks: they move each step, by design. */
function unmarked(request: RecordedRequest): string {
  const text = request.text.replaceAll(cacheMark, "");
  expect(text).not.toContain("cache_control");
  return text;
}

/** How many leading bytes `a` and `b` share, with a message showing where they part. */
function commonPrefix(a: string, b: string, what: string): { length: number; where: string } {
  let length = 0;
  while (length < a.length && a[length] === b[length]) length++;
  return {
    length,
    where: `${what} differ at byte ${length}: …${a.slice(length - 80, length + 80)}… vs …${b.slice(length - 80, length + 80)}…`,
  };
}

/** Asserts `prefix` is a byte prefix of `text`, followed there by `then`. */
function expectBytePrefix(prefix: string, text: string, then: string, what: string): void {
  const common = commonPrefix(prefix, text, what);
  expect(common.length, common.where).toBe(prefix.length);
  expect(text.slice(prefix.length, prefix.length + then.length), what).toBe(then);
}

/**
 * The PR4 property, request by request: the body of step n (less cache marks, and the `]}` that
 * closes its messages, which come last) is a byte prefix of step n+1's, which only appends
 * messages. At a step where a tool joined, the tools (which come first) of step n are a byte
 * prefix of step n+1's, the new tool appended, and the rest of the body (system, messages) of
 * step n a byte prefix of the rest of step n+1's. Answers the steps where tools joined.
 */
function expectEachAPrefixOfTheNext(requests: RecordedRequest[]): number[] {
  const joined: number[] = [];
  const split = (text: string): { head: string; rest: string } => {
    const tools = `"tools":${JSON.stringify(JSON.parse(text).tools)}`;
    const end = text.indexOf(tools) + tools.length;
    return { head: text.slice(0, end), rest: text.slice(end) };
  };
  for (let step = 0; step + 1 < requests.length; step++) {
    const [text, next] = [unmarked(requests[step]!), unmarked(requests[step + 1]!)];
    const what = `step ${step} → ${step + 1}`;
    expect(text.endsWith("]}")).toBe(true);
    const [parts, nextParts] = [split(text), split(next)];
    if (parts.head === nextParts.head) {
      expectBytePrefix(text.slice(0, -2), next, ",{", what);
      continue;
    }
    joined.push(step + 1);
    expectBytePrefix(parts.head.slice(0, -1), nextParts.head, ",{", `${what} (tools)`);
    expectBytePrefix(parts.rest.slice(0, -2), nextParts.rest, ",{", `${what} (system and messages)`);
  }
  return joined;
}

const toolNamesOf = (request: RecordedRequest, nameOf: (tool: any) => string): string[] => request.body.tools.map(nameOf);

/** Tools that join mid-run go at the end: each step's list starts with the one before it. */
function expectToolsAppended(names: string[][]): void {
  for (let step = 0; step + 1 < names.length; step++) expect(names[step + 1]!.slice(0, names[step]!.length)).toEqual(names[step]);
  expect(names[0]).toEqual([...names[0]!].sort());
  expect(names[2]!.at(-1)).toBe("history_read_tool_result");
  expect(names[3]!.slice(names[2]!.length)).toContain("weather_lookup");
  expect(names[5]!.slice(names[4]!.length)).toContain("calendar_list_events");
  expect(names[19]).toEqual(names[5]);
}

describe("prompt caching", () => {
  it("PR4: over a 20-step Anthropic run with tool results, images, a projected result and mid-run tool activations, each request's serialized body (less cache marks) is a byte prefix of the next one's, with cache breakpoints on system, the previous step's end and the last block", async () => {
    const { requests } = await runPlan("claude", anthropic);
    // Only where a tool joined does anything but messages change; it joins at the end of the tools.
    expect(expectEachAPrefixOfTheNext(requests)).toEqual([2, 3, 5]);
    expectToolsAppended(requests.map((request) => toolNamesOf(request, (tool) => tool.name)));

    // The run had what makes a prefix move: images, a projection note, activations.
    const last = requests.at(-1)!.text;
    expect(last).toContain('"type":"image"');
    expect(last).toContain("res_1_1_0");

    for (const [step, { body, text }] of requests.entries()) {
      expect(text.split('"cache_control"').length - 1, `marks at step ${step}`).toBe(step === 0 ? 2 : 3);
      // Tools, then system, then messages: the order the API caches them in.
      expect(Object.keys(body)).toEqual(["model", "max_tokens", "stream", "tools", "system", "messages"]);
      expect(body.system).toEqual([{ type: "text", text: "You are the prompt-cache test agent.", cache_control: { type: "ephemeral" } }]);
      expect(body.tools.some((tool: object) => "cache_control" in tool)).toBe(false);
      const lastTurn = body.messages.at(-1);
      expect(lastTurn.role).toBe("user");
      expect(lastTurn.content.at(-1).cache_control).toEqual({ type: "ephemeral" });
      if (step > 0) {
        // The turn that ended the previous step's request: where that step's cache entry ends.
        const previousEnd = body.messages.at(-3);
        expect(previousEnd.role).toBe("user");
        expect(previousEnd.content.at(-1).cache_control).toEqual({ type: "ephemeral" });
        expect(JSON.stringify(previousEnd.content.at(-1))).toBe(JSON.stringify(requests[step - 1]!.body.messages.at(-1).content.at(-1)));
      }
    }
  });

  it("PR4: over the same 20-step run against an OpenAI-compatible server, each request's serialized body is a byte prefix of the next one's, tools first", async () => {
    const { requests } = await runPlan("gpt", openai);
    expect(expectEachAPrefixOfTheNext(requests)).toEqual([2, 3, 5]);
    expectToolsAppended(requests.map((request) => toolNamesOf(request, (tool) => tool.function.name)));
    for (const { body, text } of requests) {
      expect(text).not.toContain("cache_control");
      expect(Object.keys(body)).toEqual(["model", "stream", "stream_options", "tools", "messages"]);
    }
    expect(requests.at(-1)!.text).toContain('"type":"image_url"');
  });

  it("PR4: cached tokens summed per run from a fake provider that reports them, per tenant in /v1/usage and in /metrics", async () => {
    const tenant = await env.newTenant("cache tenant");
    const scrape = async (): Promise<string> =>
      (await env.app.request("/metrics", { headers: { authorization: `Bearer ${metricsToken}` } })).text();
    const before = await scrape();

    const runOn = async (profile: string): Promise<any> => {
      const { sessionId } = await tenant.newSession({ providerProfile: profile });
      const run = await tenant.startRun(sessionId, "work through the plan");
      expect((await tenant.waitForRun(run.body.id, 120_000)).status).toBe("completed");
      return (await tenant.get(`/v1/runs/${run.body.id}`)).body;
    };
    const sum = (of: (step: number) => number): number => Array.from({ length: steps }, (_, step) => of(step)).reduce((a, b) => a + b, 0);

    const claude = await runOn("claude");
    // Anthropic's input_tokens leave out cached ones; the run's inputTokens is the whole prompt.
    const claudeRead = sum((step) => anthropicUsage(step).cacheRead ?? 0);
    const claudeWrite = sum((step) => anthropicUsage(step).cacheWrite ?? 0);
    expect(claude.usage).toEqual({
      inputTokens: sum(() => 20) + claudeRead + claudeWrite,
      outputTokens: sum((step) => (step === steps - 1 ? 3 : 7)),
      cacheReadTokens: claudeRead,
      cacheWriteTokens: claudeWrite,
    });

    const gpt = await runOn("gpt");
    const gptRead = sum(openaiCached);
    expect(gpt.usage).toEqual({
      inputTokens: sum((step) => 2000 + step),
      outputTokens: sum(() => 7),
      cacheReadTokens: gptRead,
      cacheWriteTokens: 0,
    });

    // Per tenant: both runs, today.
    const usage = (await tenant.get("/v1/usage")).body.usage;
    expect(usage).toMatchObject({ cacheReadTokensToday: claudeRead + gptRead, cacheWriteTokensToday: claudeWrite });
    expect(usage.tokensToday).toBe(claude.usage.inputTokens + claude.usage.outputTokens + gpt.usage.inputTokens + gpt.usage.outputTokens);

    const after = await scrape();
    const grew = (labels: Record<string, string>): number =>
      (sample(after, "foya_model_cache_tokens_total", labels) ?? 0) - (sample(before, "foya_model_cache_tokens_total", labels) ?? 0);
    const tenantId = tenant.tenantId as string;
    expect(grew({ profile: "claude", kind: "read", tenant: tenantId })).toBe(claudeRead);
    expect(grew({ profile: "claude", kind: "write", tenant: tenantId })).toBe(claudeWrite);
    expect(grew({ profile: "gpt", kind: "read", tenant: tenantId })).toBe(gptRead);
    expect(grew({ profile: "gpt", kind: "write", tenant: tenantId })).toBe(0);
  });
});
