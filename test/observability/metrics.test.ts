import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMetricsServer } from "../../src/observability/metrics-server.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  usageChunk,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { sample } from "../helpers/prometheus-text.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";
import { startReceiver, type WebhookReceiver } from "../webhooks/webhook-receiver.js";

const token = "metrics-token-0123456789abcdef";
let env: TestEnv;
let client: ApiClient;
let wire: OpenAIWireServer;
let receiver: WebhookReceiver;

beforeAll(async () => {
  wire = await startOpenAIWireServer(() => sseScript([textChunk("ok"), finishChunk("stop"), usageChunk(500, 100)]));
  const providersFile = await writeProvidersFile([
    { name: "wire", kind: "openai-chat", baseUrl: wire.baseUrl, model: "wire-model", apiKeyEnv: "WIRE_KEY" },
  ]);
  env = await createTestEnv({
    FOYA_METRICS_TOKEN: token,
    FOYA_PROVIDERS_FILE: providersFile,
    WIRE_KEY: "sk-wire",
    FOYA_WEBHOOK_POLL_MS: "100",
    FOYA_WEBHOOK_ALLOW_PRIVATE: "true",
  });
  await env.startWorker();
  client = await env.newTenant("metrics tenant");
  receiver = await startReceiver();
});
afterAll(async () => {
  await env?.close();
  await wire?.close();
  await receiver?.close();
});

async function scrape(): Promise<string> {
  const response = await env.app.request("/metrics", { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return response.text();
}

/** How much a series grew between two scrapes (a series absent before counts from 0). */
const grew = (before: string, after: string, name: string, labels: Record<string, string> = {}) =>
  (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

describe("metrics", () => {
  it("X8: /metrics answers only with its own token, never with an API key or the admin token", async () => {
    expect((await env.app.request("/metrics")).status).toBe(401);
    for (const other of [client.key, env.config.api.adminToken ?? "", `${token}x`]) {
      const refused = await env.app.request("/metrics", { headers: { authorization: `Bearer ${other}` } });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    }
    const answered = await env.app.request("/metrics", { headers: { authorization: `Bearer ${token}` } });
    expect(answered.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await answered.text()).toContain("# HELP foya_job_duration_seconds");
  });

  it("X8: jobs, model requests and tokens, tool calls, sandbox starts, runs, API requests and webhook deliveries move when a run happens; queues and workers are read at the scrape", async () => {
    const hook = await client.post("/v1/webhooks", { url: receiver.url, eventTypes: ["run_end"] });
    expect(hook.status).toBe(201);
    const before = await scrape();
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ tool: "bash", args: { command: "echo measured" } }], [{ text: "done" }]]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const wired = await client.newSession({ providerProfile: "wire" });
    const wiredRun = await client.startRun(wired.sessionId, "hi");
    expect((await client.waitForRun(wiredRun.body.id)).status).toBe("completed");
    await waitFor(async () => receiver.received.length >= 2, 20_000, "both run_end webhooks");
    // The job's own outcome is observed a moment after its commit.
    const after = await waitFor(
      async () => {
        const text = await scrape();
        return grew(before, text, "foya_job_duration_seconds_count", { queue: "steps", outcome: "committed" }) >= 3 &&
          grew(before, text, "foya_webhook_deliveries_total", { outcome: "delivered" }) >= 2
          ? text
          : undefined;
      },
      20_000,
      "the jobs' and deliveries' outcomes in the metrics",
    );

    expect(grew(before, after, "foya_job_duration_seconds_count", { queue: "tools", outcome: "committed" })).toBe(1);
    expect(grew(before, after, "foya_job_wait_seconds_count", { queue: "steps" })).toBeGreaterThanOrEqual(3);
    expect(grew(before, after, "foya_tool_calls_total", { tool: "bash", outcome: "succeeded", tenant: client.tenantId as string })).toBe(1);
    expect(grew(before, after, "foya_tool_call_duration_seconds_count", { tool: "bash" })).toBe(1);
    expect(grew(before, after, "foya_sandbox_start_seconds_count")).toBe(1);
    expect(grew(before, after, "foya_model_request_duration_seconds_count", { profile: "wire", outcome: "ok" })).toBe(1);
    expect(grew(before, after, "foya_model_request_duration_seconds_count", { outcome: "ok" })).toBe(3);
    expect(grew(before, after, "foya_model_tokens_total", { profile: "wire", kind: "input", tenant: client.tenantId as string })).toBe(500);
    expect(grew(before, after, "foya_model_tokens_total", { profile: "wire", kind: "output", tenant: client.tenantId as string })).toBe(
      100,
    );
    expect(grew(before, after, "foya_runs_ended_total", { status: "completed", tenant: client.tenantId as string })).toBe(2);
    expect(grew(before, after, "foya_api_requests_total", { method: "POST", route: "/v1/sessions/:id/runs", status: "202" })).toBe(2);
    expect(grew(before, after, "foya_webhook_deliveries_total", { outcome: "delivered" })).toBe(2);
    // Read from Redis and Postgres when scraped.
    expect(sample(after, "foya_workers_live")).toBe(1);
    expect(sample(after, "foya_deleted_projects_with_files")).toBe(0);
    expect(sample(after, "foya_queue_jobs", { queue: "steps", state: "waiting" })).toBe(0);
    expect(sample(after, "foya_queue_oldest_waiting_seconds", { queue: "tools" })).toBe(0);
    expect(after).toContain("# HELP foya_sweeper_actions_total");
    expect(sample(after, "foya_sweeper_actions_total", { action: "redispatched" })).toBeGreaterThanOrEqual(0);
    expect(sample(after, "foya_process_resident_memory_bytes")).toBeGreaterThan(0);
  });

  it("X8: approvals waiting and the time to a decision", async () => {
    const before = await scrape();
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "asked" } }], [{ text: "done" }]]));
    const pending = await waitFor(
      async () => (await client.get(`/v1/approvals?status=pending&sessionId=${sessionId}`)).body.approvals?.[0],
      20_000,
      "the approval",
    );
    expect(sample(await scrape(), "foya_approvals_waiting")).toBe(1);
    expect((await client.post(`/v1/approvals/${pending.id}`, { decision: "approve" })).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const after = await scrape();
    expect(sample(after, "foya_approvals_waiting")).toBe(0);
    expect(grew(before, after, "foya_approval_decision_seconds_count", { decision: "approved" })).toBe(1);
  });

  it("X8: open event streams are counted while they are open", async () => {
    const server = await env.startServer();
    const { sessionId } = await client.newSession();
    const controller = new AbortController();
    const response = await fetch(`${server.url}/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${client.key}`, accept: "text/event-stream" },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    void (async () => {
      try {
        for await (const chunk of response.body!) void chunk;
      } catch {
        // aborted
      }
    })();
    await waitFor(async () => sample(await scrape(), "foya_sse_clients") === 1, 10_000, "one stream counted");
    controller.abort();
    await waitFor(async () => sample(await scrape(), "foya_sse_clients") === 0, 10_000, "the closed stream uncounted");
  });

  it("X8: FOYA_METRICS_PORT serves the same registry on a port of its own, and nothing else there", async () => {
    const server = await startMetricsServer(env.services.metrics.registry, { host: "127.0.0.1", port: 0, onError: () => undefined });
    try {
      const answered = await fetch(server.url);
      expect(answered.status).toBe(200);
      expect(await answered.text()).toContain("foya_tool_calls_total");
      expect((await fetch(server.url.replace("/metrics", "/v1/usage"))).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
