import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, type ApiClient } from "../helpers/api-client.js";
import {
  finishChunk,
  recordedScript,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  usageChunk,
  type OpenAIWireServer,
  type WireRequest,
  type WireScript,
} from "../helpers/openai-wire-server.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { sample } from "../helpers/prometheus-text.js";
import { providerRateLimit, type RateLimiter } from "../helpers/provider-rate-limit.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/**
 * Provider budgets, backpressure and fallbacks (SPEC PR3) across two worker processes, against
 * fake providers over real HTTP. The providers' windows and the budgets' are shortened to
 * seconds (`windowMs`), so a minute's worth of traffic takes a few seconds.
 */

/** The fake providers' own limit per window (a minute's, in 2 s): requests, and tokens counted as they arrive. */
const providerLimit = { windowMs: 2000, requests: 60, tokens: 20_000 };
const fairWindowMs = 2000;
const fairRequests = 10;

let env: TestEnv;
const workers: FoyaProcess[] = [];
const servers: OpenAIWireServer[] = [];
const limiters = new Map<string, RateLimiter>();
let throttledAnswers: (request: Omit<WireRequest, "outcome">) => WireScript = () => sseScript([textChunk("ok"), finishChunk("stop")]);

/** Tokens the fake provider reports and counts for a request: its prompt (two tokens a byte of its body) and 20 out. */
const promptTokensOf = (request: Omit<WireRequest, "outcome">) => 2 * request.text.length;

/** A run of two steps: a call of `noop`, then an answer once the call's result is in the request. */
function toolThenAnswer(request: Omit<WireRequest, "outcome">): WireScript {
  const messages = request.body.messages as Array<{ role: string }>;
  const usage = usageChunk(promptTokensOf(request), 20);
  if (messages.at(-1)?.role === "tool") return sseScript([textChunk("done"), finishChunk("stop"), usage]);
  return sseScript([toolCallStartChunk(0, `call_${messages.length}`, "noop"), toolArgsChunk(0, "{}"), finishChunk("tool_calls"), usage]);
}

/** A fake provider behind its own rate limit (test/helpers/provider-rate-limit.ts). */
async function limitedProvider(name: string): Promise<OpenAIWireServer> {
  const limiter = providerRateLimit(providerLimit);
  limiters.set(name, limiter);
  return startOpenAIWireServer((request) => {
    const decision = limiter.admit(promptTokensOf(request) + 20, request.at);
    return decision.kind === "refuse" ? decision : toolThenAnswer(request);
  });
}

beforeAll(async () => {
  const free = await limitedProvider("free");
  const budgeted = await limitedProvider("budgeted");
  const fair = await startOpenAIWireServer(() => sseScript([textChunk("ok"), finishChunk("stop"), usageChunk(100, 5)]));
  const throttled = await startOpenAIWireServer((request) => throttledAnswers(request));
  const primary = await startOpenAIWireServer(() => ({
    status: 429,
    body: '{"error":{"message":"Rate limit reached","type":"requests"}}',
    headers: { "retry-after": "30" },
  }));
  // The fallback answers with a recorded stream (two calls of tools this server does not have), then ends the run.
  const backup = await startOpenAIWireServer(({ body }) =>
    body.messages.at(-1)?.role === "tool"
      ? sseScript([textChunk("done"), finishChunk("stop")])
      : recordedScript("openai-chat-gpt-4o-parallel-tool-calls.sse"),
  );
  const failing = await startOpenAIWireServer(() => ({ status: 500, body: '{"error":{"message":"upstream exploded"}}' }));
  servers.push(free, budgeted, fair, throttled, primary, backup, failing);
  const wire = (name: string, server: OpenAIWireServer, extra: object = {}) => ({
    name,
    kind: "openai-chat",
    baseUrl: server.baseUrl,
    model: `${name}-model`,
    ...extra,
  });
  const providersFile = await writeProvidersFile([
    wire("free", free),
    // Under the provider's limits: requests reach it a little after they are counted.
    wire("budgeted", budgeted, {
      budget: { requestsPerMinute: 54, inputTokensPerMinute: 15_000, outputTokensPerMinute: 1000, windowMs: providerLimit.windowMs },
    }),
    wire("fair", fair, { budget: { requestsPerMinute: fairRequests, windowMs: fairWindowMs } }),
    wire("throttled", throttled),
    wire("primary", primary, { fallbacks: ["backup"] }),
    wire("backup", backup, { model: "gpt-4o-2024-08-06" }),
    wire("failing", failing, { fallbacks: ["backup"] }),
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile, FOYA_STEP_CONCURRENCY: "8", FOYA_TOOL_CONCURRENCY: "8" });
  await Promise.all([0, 1].map(async () => workers.push(await startFoyaProcess("worker", env.env))));
}, 90_000);
afterAll(async () => {
  for (const worker of workers) {
    worker.kill("SIGKILL");
    await worker.exited;
  }
  await env?.close();
  for (const server of servers) await server.close();
});

/** `count` runs, each in a session of its own; the sessions are made first, so the runs start as one burst. */
async function startRuns(
  client: ApiClient,
  profile: string,
  count: number,
  input = "go",
): Promise<Array<{ sessionId: string; runId: string }>> {
  const sessions: string[] = [];
  for (let i = 0; i < count; i++) sessions.push((await client.newSession({ providerProfile: profile, toolAllowList: ["noop"] })).sessionId);
  return Promise.all(
    sessions.map(async (sessionId) => {
      const started = await client.startRun(sessionId, input);
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      return { sessionId, runId: started.body.id as string };
    }),
  );
}

/** When each run's first model step started and when the run was created, from what Postgres recorded. */
async function startTimes(runIds: readonly string[]): Promise<Map<string, { created: number; stepStarted: number }>> {
  const rows = await env.query<{ id: string; created: Date; step_started: Date }>(
    "select r.id, r.created_at as created, s.created_at as step_started from runs r join steps s on s.run_id = r.id and s.index = 0 where r.id = any($1)",
    [runIds],
  );
  return new Map(rows.map((row) => [row.id, { created: row.created.getTime(), stepStarted: row.step_started.getTime() }]));
}

describe("provider budgets, backpressure and fallbacks", () => {
  it("PR3: two workers, 40 runs, a fake provider limited to 60 requests and 20k tokens a window (a minute's, in 2 s) that answers 429 past it: after the first 429 of a window it sees nothing more in it, no step fails and every run completes; with a budget under its limits, no 429 at all", async () => {
    const client = await env.newTenant("burst");
    for (const profile of ["free", "budgeted"]) {
      const runs = await startRuns(client, profile, 40);
      for (const { runId } of runs) {
        const done = await client.waitForRun(runId, 60_000);
        expect(done.status, JSON.stringify(done.error)).toBe("completed");
      }
      const limiter = limiters.get(profile) as RateLimiter;
      const refused = limiter.arrivals.filter((arrival) => arrival.refused);
      // Requests already on their way when the first 429 of a window was answered may meet it too; none later.
      expect(limiter.afterFirstRefusal(250), profile).toEqual([]);
      expect(limiter.arrivals.length - refused.length, profile).toBe(80);
      if (profile === "free") expect(refused.length).toBeGreaterThan(0);
      else expect(refused, "the budget kept every request under the provider's limits").toEqual([]);
      const steps = await env.query<{ n: number }>("select count(*)::int as n from steps where run_id = any($1) and status = 'failed'", [
        runs.map((run) => run.runId),
      ]);
      expect(steps[0]?.n).toBe(0);
    }
    const usage = (await client.get("/v1/usage")).body;
    const budgeted = usage.providers.find((entry: { profile: string }) => entry.profile === "budgeted");
    expect(budgeted).toMatchObject({
      windowMs: providerLimit.windowMs,
      limits: { requests: 54, inputTokens: 15_000, outputTokens: 1000, concurrent: 0 },
    });
    const metrics = await env.services.metrics.registry.metrics();
    expect(sample(metrics, "foya_provider_budget_limit", { profile: "budgeted", kind: "requests" })).toBe(54);
  }, 120_000);

  it("PR3: one tenant's 30 runs and another's 1 on one budget: the second tenant's model step starts within its fair share", async () => {
    const flooding = await env.newTenant("flooding");
    const quiet = await env.newTenant("quiet");
    const flood = await startRuns(flooding, "fair", 30);
    const fair = servers[2] as OpenAIWireServer;
    // The flood has filled the budget's window before the quiet tenant's run arrives.
    await waitFor(async () => fair.requests.length >= fairRequests, 10_000, "the flood to fill the window");
    const [single] = await startRuns(quiet, "fair", 1, "go, quietly");
    const { runId } = single as { runId: string };
    expect((await quiet.waitForRun(runId, 30_000)).status).toBe("completed");
    for (const run of flood) expect((await flooding.waitForRun(run.runId, 60_000)).status).toBe("completed");
    const times = await startTimes([runId, ...flood.map((run) => run.runId)]);
    const mine = times.get(runId) as { created: number; stepStarted: number };
    // Within the window that was full when it came (and a slice), not behind the whole flood (3 windows).
    expect(mine.stepStarted - mine.created).toBeLessThan(fairWindowMs + 1500);
    // While it waited (from its step's refusal by the budget, when it joined the budget's waiters, to
    // its grant), the flood got at most its share of the freed window: half of it. Steps granted
    // before it asked at all (its job still on its way to a worker) are not its share's business.
    // Grants are seen where they arrive: each run makes one request, at the fake provider.
    const [waiting] = await env.query<{ at: Date }>(
      "select created_at as at from events where run_id = $1 and type = 'run_status' and data->>'status' = 'waiting_for_provider' order by seq limit 1",
      [runId],
    );
    const waitedFrom = waiting?.at.getTime() ?? mine.created;
    const isQuiet = (request: { body: { messages?: unknown } }) => JSON.stringify(request.body.messages).includes("go, quietly");
    const quietRequest = fair.requests.find(isQuiet);
    expect(quietRequest).toBeDefined();
    // A request granted just before the quiet run asked may arrive just after (6 counted once, for 5).
    const grantToRequestMs = 250;
    const floodWhileWaiting = fair.requests.filter(
      (request) => !isQuiet(request) && request.at > waitedFrom + grantToRequestMs && request.at < (quietRequest?.at ?? 0),
    );
    expect(floodWhileWaiting.length).toBeLessThanOrEqual(fairRequests / 2);
    const events = await quiet.events(single?.sessionId as string);
    expect(events.some((event) => event.type === "run_status" && event.data.status === "waiting_for_provider")).toBe(true);
  }, 90_000);

  it("PR3: a 429 with Retry-After: 3 pauses the profile for every worker for about 3 s, with no request in between", async () => {
    const client = await env.newTenant("throttled");
    let refusedAt: number | undefined;
    throttledAnswers = (request) => {
      if (refusedAt === undefined) {
        refusedAt = request.at;
        return { status: 429, body: '{"error":{"message":"Rate limit reached","type":"requests"}}', headers: { "retry-after": "3" } };
      }
      return sseScript([textChunk("ok"), finishChunk("stop"), usageChunk(50, 2)]);
    };
    const throttled = servers[3] as OpenAIWireServer;
    const [first] = await startRuns(client, "throttled", 1);
    // The run that met the 429 says it waits: the profile is paused by then.
    await waitFor(
      async () => (await client.events(first?.sessionId as string)).some((event) => event.data.status === "waiting_for_provider"),
      10_000,
      "the first run to wait",
    );
    const later = await startRuns(client, "throttled", 6);
    for (const { runId } of [first, ...later] as Array<{ runId: string }>)
      expect((await client.waitForRun(runId, 20_000)).status).toBe("completed");
    const arrivals = throttled.requests.map((request) => request.at).sort((a, b) => a - b);
    expect(arrivals).toHaveLength(8);
    const gap = (arrivals[1] as number) - (refusedAt as number);
    expect(gap).toBeGreaterThanOrEqual(2900);
    expect(gap).toBeLessThan(4500);
    // Every later run waited for the pause, whichever worker took it.
    for (const { sessionId } of later) {
      const waits = (await client.events(sessionId)).filter((event) => event.data.status === "waiting_for_provider");
      expect(waits[0]?.data, sessionId).toMatchObject({ reason: expect.stringMatching(/paused/) });
      expect(waits[0]?.data.waitMs).toBeLessThanOrEqual(3000);
    }
    const [step] = await env.query<{ attempt: number; status: string }>("select attempt, status from steps where run_id = $1", [
      first?.runId,
    ]);
    expect(step?.status).toBe("completed");
  }, 60_000);

  it("PR3: a fallback profile answers when the primary is paused, and step_end names the model that answered", async () => {
    const client = await env.newTenant("fallback");
    const primary = servers[4] as OpenAIWireServer;
    const runs = await startRuns(client, "primary", 1);
    expect((await client.waitForRun(runs[0]?.runId as string, 20_000)).status).toBe("completed");
    // The primary answered 429 with Retry-After: 30: it is paused now, and the next run goes to the fallback at once.
    const usage = (await client.get("/v1/usage")).body;
    expect(usage.providers.find((entry: { profile: string }) => entry.profile === "primary")?.pausedForMs).toBeGreaterThan(20_000);
    runs.push(...(await startRuns(client, "primary", 1)));
    expect((await client.waitForRun(runs[1]?.runId as string, 20_000)).status).toBe("completed");
    expect(primary.requests).toHaveLength(1);
    for (const { sessionId } of runs) {
      const ends = (await client.events(sessionId)).filter((event) => event.type === "step_end");
      expect(ends[0]?.data).toMatchObject({ profile: "backup", model: "gpt-4o-2024-08-06", finishReason: "tool_calls" });
      // The recorded stream's usage is what the step records.
      expect(ends[0]?.data.usage).toMatchObject({ inputTokens: 149, outputTokens: 60 });
    }
    const metrics = await env.services.metrics.registry.metrics();
    expect(sample(metrics, "foya_provider_paused_seconds", { profile: "primary" })).toBeGreaterThan(10);
  }, 60_000);

  it("PR3: a profile failing past its retry budget hands the step's last attempt to its fallback, before any output", async () => {
    const client = await env.newTenant("failing");
    const failing = servers[6] as OpenAIWireServer;
    const [run] = await startRuns(client, "failing", 1);
    expect((await client.waitForRun(run?.runId as string, 20_000)).status).toBe("completed");
    // Every attempt of the first step asked the failing profile once; the last one was answered by the fallback.
    const firstStep = failing.requests.filter((request) => request.body.messages.length === 1);
    expect(firstStep).toHaveLength(env.config.runs.stepAttempts);
    const [step] = await env.query<{ attempt: number }>("select attempt from steps where run_id = $1 and index = 0", [run?.runId]);
    expect(step?.attempt).toBe(env.config.runs.stepAttempts);
    const ends = (await client.events(run?.sessionId as string)).filter((event) => event.type === "step_end");
    expect(ends[0]?.data).toMatchObject({ attempt: env.config.runs.stepAttempts, profile: "backup" });
  }, 60_000);
});
