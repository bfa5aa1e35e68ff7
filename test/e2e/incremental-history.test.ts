import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/**
 * Each worker keeps the histories it served and a step's claim reads only the
 * messages written since (src/worker/step/history-cache.ts). Seen from the model,
 * nothing may differ from a whole read: every request carries the complete
 * history, each one a prefix of the next, whichever worker served the step.
 */
let env: TestEnv;
let client: ApiClient;
let server: OpenAIWireServer;
const toolStepsPerRun = 3;

beforeAll(async () => {
  server = await startOpenAIWireServer(({ body }) => {
    const messages = body.messages as Array<{ role: string }>;
    const lastUser = messages.map((m) => m.role).lastIndexOf("user");
    const toolResults = messages.slice(lastUser + 1).filter((m) => m.role === "tool").length;
    if (toolResults < toolStepsPerRun) {
      const id = `call_${messages.length}`;
      return sseScript([toolCallStartChunk(0, id, "noop"), toolArgsChunk(0, "{}"), finishChunk("tool_calls")]);
    }
    return sseScript([textChunk(`done after ${messages.length} messages`), finishChunk("stop")]);
  });
  const providersFile = await writeProvidersFile([
    { name: "wire", kind: "openai-chat", baseUrl: server.baseUrl, model: "wire-model", apiKeyEnv: "WIRE_KEY" },
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile, WIRE_KEY: "sk-wire" });
  // Two workers in one process, each with its own history copies: steps of one run go to either.
  await env.startWorker();
  await env.startWorker();
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await server?.close();
});

describe("incremental history", () => {
  it("D1, D4: every model request carries the whole history (the worker's incremental copy never drifts from Postgres), each a prefix of the next, across runs and alternating workers", async () => {
    const { sessionId } = await client.newSession({ providerProfile: "wire" });
    const before = server.requests.length;
    for (let turn = 0; turn < 3; turn++) {
      const run = await client.startRun(sessionId, `turn ${turn}`);
      const done = await client.waitForRun(run.body.id);
      expect(done.status).toBe("completed");
    }
    const requests = server.requests.slice(before).map((request) => (request.body as { messages: unknown[] }).messages);
    expect(requests).toHaveLength(3 * (toolStepsPerRun + 1));
    const last = requests.at(-1)!;
    for (const [index, messages] of requests.entries()) {
      // Within a turn each step adds the assistant message and its tool result; a new turn adds the last answer and the input.
      expect(messages.length).toBe(index === 0 ? requests[0]!.length : requests[index - 1]!.length + 2);
      expect(last.slice(0, messages.length)).toEqual(messages);
    }
    // The last request holds everything but the final answer (the session has no system prompt).
    const stored = await client.messages(sessionId);
    expect(stored.length).toBe(last.length + 1);
  });
});
