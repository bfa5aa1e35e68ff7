import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../helpers/api-client.js";
import { startAnthropicWireServer, type AnthropicWireServer } from "../helpers/anthropic-wire-server.js";
import { startOpenAIWireServer, textChunk, type OpenAIWireServer } from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/** Things only the operator may see: secret path segments, a query signature and the API keys. */
const secretPath = "gw-7f3a9c2e1b5d";
const secretSig = "sig-Qm9vYmFyLXNlY3JldA";
const openaiKey = "sk-live-0123456789abcdef";
const anthropicKey = "sk-ant-fedcba9876543210";

let env: TestEnv;
let client: ApiClient;
let openai: OpenAIWireServer;
let anthropic: AnthropicWireServer;
let closedPort: number;

/** A port nobody listens on: connecting to it is refused. */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  // Like a gateway that echoes what it was sent: the URL and the credentials.
  openai = await startOpenAIWireServer(({ url, headers }) => ({
    status: 404,
    body: JSON.stringify({
      error: { type: "not_found", message: `no deployment at http://${headers.host}${url} for ${headers.authorization}` },
    }),
  }));
  anthropic = await startAnthropicWireServer(() => ({ events: [] }));
  closedPort = await unusedPort();
  const providersFile = await writeProvidersFile([
    {
      name: "gateway",
      kind: "openai-chat",
      baseUrl: `${openai.baseUrl.replace(/\/v1$/, "")}/${secretPath}/v1?sig=${secretSig}`,
      model: "m",
      apiKeyEnv: "GATEWAY_KEY",
    },
    // The Messages endpoint lives at /v1/messages only, so this answers 404 naming the path it got.
    { name: "claude", kind: "anthropic-messages", baseUrl: `${anthropic.baseUrl}/${secretPath}`, model: "m", apiKey: anthropicKey },
    { name: "offline", kind: "openai-chat", baseUrl: `http://127.0.0.1:${closedPort}/${secretPath}/v1`, model: "m", apiKey: openaiKey },
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile, GATEWAY_KEY: openaiKey, FOYA_STEP_ATTEMPTS: "1", LOG_LEVEL: "fatal" });
  await env.startWorker();
  client = await env.newTenant();
});
afterAll(async () => {
  await env?.close();
  await openai?.close();
  await anthropic?.close();
});

/** Everything a tenant can read about a run: the run, its session's events and messages. */
async function whatTheTenantSees(profile: string) {
  const { sessionId } = await client.newSession({ providerProfile: profile });
  const run = await client.startRun(sessionId, "hello");
  const done = await client.waitForRun(run.body.id);
  const seen = JSON.stringify([
    done,
    await client.events(sessionId),
    await client.messages(sessionId),
    (await client.get(`/v1/sessions/${sessionId}`)).body,
  ]);
  return { done, seen };
}

function expectNoSecrets(seen: string) {
  for (const secret of [secretPath, secretSig, openaiKey, anthropicKey, "127.0.0.1", "http://", "localhost"]) {
    expect(seen, secret).not.toContain(secret);
  }
}

describe("provider errors a tenant sees", () => {
  it("S10: an HTTP error that echoes the URL and the key fails the run with status, profile and reason, and neither", async () => {
    const { done, seen } = await whatTheTenantSees("gateway");
    expect(openai.requests.length).toBeGreaterThan(0);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("provider_error");
    expect(done.error.message).toMatch(/^404 not_found: no deployment at /);
    expect(done.error.message).toContain('provider profile "gateway"');
    expectNoSecrets(seen);
  });

  it("S10: a 404 naming the secret path (Anthropic) is redacted the same way", async () => {
    const { done, seen } = await whatTheTenantSees("claude");
    expect(done.error.code).toBe("provider_error");
    expect(done.error.message).toMatch(/^404 not_found_error: no route \[redacted\]/);
    expect(done.error.message).toContain('provider profile "claude"');
    expectNoSecrets(seen);
  });

  it("S10: a refused connection says so, without the address", async () => {
    const { done, seen } = await whatTheTenantSees("offline");
    expect(done.error).toEqual({ code: "provider_error", message: 'provider profile "offline" could not be reached: connection refused' });
    expect(seen).not.toContain(String(closedPort));
    expectNoSecrets(seen);
  });
});

describe("internal errors the API answers", () => {
  it("S10: a 500 says only that it failed and a request id, never the driver's message", async () => {
    const tenant = await env.newTenant("broken");
    const { projectId } = await tenant.newSession();
    // The API's next read of projects fails inside the driver.
    await env.query("alter table projects rename to projects_gone");
    try {
      const response = await env.app.request(`/v1/projects/${projectId}`, {
        headers: { authorization: `Bearer ${tenant.key}`, "x-request-id": "req-s10-test" },
      });
      expect(response.status).toBe(500);
      expect(response.headers.get("x-request-id")).toBe("req-s10-test");
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("internal");
      expect(body.error.message).toContain("req-s10-test");
      expect(body.error.message).not.toMatch(/projects|select|relation|postgres/i);
    } finally {
      await env.query("alter table projects_gone rename to projects");
    }
  });
});

// A streamed answer that breaks off with an error quoting the key is redacted too (unit level, no run needed).
describe("mid-stream provider errors", () => {
  it("S10: an error chunk quoting the URL and the key is redacted, the rest of its message kept", async () => {
    const { createOpenAIChatProvider } = await import("../../src/providers/openai-chat.js");
    const server = await startOpenAIWireServer(({ url }) => ({
      chunks: [textChunk("partial"), { error: { message: `upstream ${url} refused key ${openaiKey}: overloaded` } }],
    }));
    try {
      const provider = createOpenAIChatProvider({
        profile: "p",
        baseUrl: `${server.baseUrl}/${secretPath}`,
        apiKey: openaiKey,
        model: "m",
      });
      const failure = (async () => {
        for await (const part of provider.stream(
          { model: "m", messages: [{ role: "user", text: "hi" }], tools: [] },
          new AbortController().signal,
        ))
          void part;
      })();
      await expect(failure).rejects.toMatchObject({ code: "provider_error", message: expect.stringMatching(/overloaded$/) });
      expectNoSecrets(
        await failure.then(
          () => "",
          (error: Error) => error.message,
        ),
      );
    } finally {
      await server.close();
    }
  });
});
