import { Writable } from "node:stream";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  usageChunk,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";
import { startReceiver, type WebhookReceiver } from "../webhooks/webhook-receiver.js";

/** Every line the service logs, at debug, as parsed JSON objects and raw text. */
const lines: string[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  },
});
const logged = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

const providerKey = "sk-provider-secret-5f9d0c3a7b";
let env: TestEnv;
let client: ApiClient;
let wire: OpenAIWireServer;
let receiver: WebhookReceiver;
let answers = 0;

beforeAll(async () => {
  // The first request is refused the way a provider refuses a bad key; later ones answer.
  wire = await startOpenAIWireServer(() =>
    answers++ === 0
      ? {
          status: 401,
          body: JSON.stringify({ error: { message: `Incorrect API key provided: ${providerKey}`, type: "invalid_request_error" } }),
        }
      : sseScript([textChunk("ok"), finishChunk("stop"), usageChunk(5, 1)]),
  );
  const providersFile = await writeProvidersFile([
    { name: "wire", kind: "openai-chat", baseUrl: wire.baseUrl, model: "wire-model", apiKeyEnv: "WIRE_KEY" },
  ]);
  env = await createTestEnv(
    {
      FOYA_PROVIDERS_FILE: providersFile,
      WIRE_KEY: providerKey,
      FOYA_STEP_ATTEMPTS: "1",
      FOYA_WEBHOOK_POLL_MS: "100",
      FOYA_WEBHOOK_ALLOW_PRIVATE: "true",
      FOYA_WEBHOOK_ATTEMPTS: "2",
      FOYA_WEBHOOK_BACKOFF_MS: "50",
    },
    { logger: createLogger("debug", { role: "test" }, capture), spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] },
  );
  await env.startWorker();
  client = await env.newTenant("logged tenant");
  // A receiver that always fails, so every delivery attempt is logged.
  receiver = await startReceiver(() => 500);
});
afterAll(async () => {
  await env?.close();
  await wire?.close();
  await receiver?.close();
});

describe("logs", () => {
  it("X8: each job's outcome is logged once with its run, session, tenant, step, attempt, job, worker and trace ids; requests are logged by route; a failed run is logged", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ tool: "bash", args: { command: "echo logged" } }], [{ text: "done" }]]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const jobLines = await waitFor(
      async () => {
        const found = logged().filter((line) => line.msg === "job done" && line.runId === run.body.id);
        return found.length === 3 ? found : undefined;
      },
      10_000,
      "three job outcome lines",
    );
    expect(jobLines.map((line) => [line.queue, line.stepIndex, line.outcome])).toEqual([
      ["steps", 0, "committed"],
      ["tools", 0, "committed"],
      ["steps", 1, "committed"],
    ]);
    for (const line of jobLines) {
      expect(line).toMatchObject({
        runId: run.body.id,
        sessionId,
        tenantId: client.tenantId,
        attempt: 1,
        workerId: expect.any(String),
        jobId: expect.any(String),
      });
      expect(line.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(line.level).toBe(30);
    }
    // One trace for the whole run: the request's.
    expect(new Set(jobLines.map((line) => line.traceId)).size).toBe(1);
    const request = logged().find((line) => line.msg === "request" && line.route === "/v1/sessions/:id/runs" && line.method === "POST");
    expect(request).toMatchObject({ status: 202, tenantId: client.tenantId, durationMs: expect.any(Number) });
    expect(String(JSON.stringify(request))).not.toContain(run.body.id);

    // A run that fails in its step job is logged for the operator, with its ids and code.
    const wired = await client.newSession({ providerProfile: "wire" });
    const failed = await client.startRun(wired.sessionId, "hi");
    expect((await client.waitForRun(failed.body.id)).status).toBe("failed");
    const failure = await waitFor(
      async () => logged().find((line) => line.msg === "job ended its run failed" && line.runId === failed.body.id),
      10_000,
      "the failed run's line",
    );
    expect(failure).toMatchObject({ level: 40, sessionId: wired.sessionId, tenantId: client.tenantId, code: "provider_error" });
  });

  it("X8: the provider key, the webhook secret, API keys and the admin token never appear in the logs", async () => {
    const hook = await client.post("/v1/webhooks", { url: receiver.url, eventTypes: ["run_end"] });
    expect(hook.status).toBe(201);
    const secret = hook.body.secret as string;
    const wired = await client.newSession({ providerProfile: "wire" });
    const run = await client.startRun(wired.sessionId, "hi again");
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    // Both attempts of the delivery fail at the receiver, and each failure is logged.
    await waitFor(
      async () => logged().filter((line) => line.msg === "webhook attempt failed").length >= 2,
      20_000,
      "the failed delivery attempts",
    );
    // A request with a wrong key is logged too.
    expect((await env.app.request("/v1/usage", { headers: { authorization: `Bearer ${client.key}x` } })).status).toBe(401);

    const text = lines.join("\n");
    expect(text.length).toBeGreaterThan(0);
    for (const value of [providerKey, secret, secret.slice("whsec_".length), client.key, env.config.api.adminToken ?? "never"]) {
      expect(text.includes(value), `a secret (${value.slice(0, 6)}...) was logged`).toBe(false);
    }
  });
});
