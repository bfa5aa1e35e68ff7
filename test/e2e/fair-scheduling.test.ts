import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers, releaseMarker } from "../fixtures/test-tools.js";
import { script, waitFor } from "../helpers/api-client.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  usageChunk,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/**
 * Fair sharing between tenants (SPEC X5): each tenant has at most its activeRuns quota of runs
 * admitted to the shared queues; the rest wait in order. Two step and two tool slots per worker,
 * so a flood is still queued when the other tenant's run arrives.
 */
let env: TestEnv;
let wire: OpenAIWireServer;

beforeAll(async () => {
  // A model that answers at once and reports 600 tokens per step.
  wire = await startOpenAIWireServer(() => sseScript([textChunk("ok"), finishChunk("stop"), usageChunk(500, 100)]));
  const providersFile = await writeProvidersFile([
    { name: "wire", kind: "openai-chat", baseUrl: wire.baseUrl, model: "wire-model", apiKeyEnv: "WIRE_KEY" },
  ]);
  env = await createTestEnv({
    FOYA_QUOTA_ACTIVE_RUNS: "4",
    FOYA_STEP_CONCURRENCY: "2",
    FOYA_TOOL_CONCURRENCY: "2",
    FOYA_PROVIDERS_FILE: providersFile,
    WIRE_KEY: "sk-wire",
  });
});
let working = false;
/** The worker starts when a test first needs it: the fairness test queues its flood before any run can start. */
async function ensureWorker(): Promise<void> {
  if (working) return;
  working = true;
  await env.startWorker();
}
afterAll(async () => {
  await env?.close();
  await wire?.close();
});

/** When each run's first step started, from the steps Postgres recorded. */
async function firstStepStarts(runIds: readonly string[]): Promise<Map<string, number>> {
  const rows = await env.query<{ run_id: string; at: Date }>(
    "select run_id, created_at as at from steps where index = 0 and run_id = any($1)",
    [runIds],
  );
  return new Map(rows.map((row) => [row.run_id, row.at.getTime()]));
}

describe("fair scheduling", () => {
  it("X5: with tenant A's 100 runs queued, tenant B's run starts before A's 10th-next run", async () => {
    const a = await env.newTenant("flooding tenant");
    const b = await env.newTenant("quiet tenant");
    // Each of A's runs: a model step calling a 100 ms tool, then a last step. All are accepted before any worker runs.
    const flood = script([[{ tool: "marker_sleep", args: { marker: "flood", sleepMs: 100 } }], [{ text: "done" }]]);
    const aRuns: string[] = [];
    for (let i = 0; i < 100; i++) {
      const { sessionId } = await a.newSession();
      aRuns.push((await a.startRun(sessionId, flood)).body.id as string);
    }
    const { sessionId } = await b.newSession();
    const bRun = (await b.startRun(sessionId, script([[{ text: "hello" }]]))).body.id as string;
    await ensureWorker();
    expect((await b.waitForRun(bRun, 60_000)).status).toBe("completed");
    const bStart = (await firstStepStarts([bRun])).get(bRun) as number;
    const aStarts = [...(await firstStepStarts(aRuns)).values()];
    // A FIFO would have served all 100 of A's first steps before B's.
    expect(aStarts.filter((at) => at < bStart).length).toBeLessThan(10);
    // A's runs all finish, in order of arrival, a few at a time.
    await waitFor(
      async () => {
        const rows = await env.query<{ n: number }>("select count(*)::int as n from runs where id = any($1) and status = 'completed'", [
          aRuns,
        ]);
        return rows[0]!.n === 100;
      },
      120_000,
      "A's runs to finish",
    );
    // Admitted oldest first: in order of arrival, within the quota's window.
    const starts = await firstStepStarts(aRuns);
    const arrival = await env.query<{ id: string }>("select id from runs where id = any($1) order by created_at, id", [aRuns]);
    const inOrder = arrival.map((row) => starts.get(row.id) as number);
    const outOfOrder = inOrder.filter((at, i) => i >= 4 && at < (inOrder[i - 4] as number)).length;
    expect(outOfOrder).toBe(0);
  }, 180_000);

  it("X5: each quota is enforced with the documented error and is visible in /v1/usage", async () => {
    await ensureWorker();
    const tenant = await env.newTenant("quota tenant");
    const patch = (quotas: object) => env.admin.request("PATCH", `/v1/tenants/${tenant.tenantId}`, { quotas });
    const patched = await patch({ activeRuns: 1, queuedRuns: 2 });
    expect(patched.body.effectiveQuotas, JSON.stringify(patched.body)).toMatchObject({ activeRuns: 1, queuedRuns: 2 });

    // activeRuns and queuedRuns: one run works, two wait, the fourth is refused. Each run's call sleeps until the
    // test has seen that (`until`), not a guessed time: the three then end one after another at once.
    const slow = script([[{ tool: "marker_sleep", args: { marker: "quota", sleepMs: 30_000, until: "quota-end" } }], [{ text: "done" }]]);
    const runs: string[] = [];
    const workspaces: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { sessionId } = await tenant.newSession();
      workspaces.push(await env.workspaceOf(sessionId));
      const started = await tenant.startRun(sessionId, slow);
      expect(started.status).toBe(202);
      runs.push(started.body.id as string);
    }
    const usage = (await tenant.get("/v1/usage")).body;
    expect(usage.quotas).toMatchObject({ activeRuns: 1, queuedRuns: 2 });
    expect(usage.usage).toMatchObject({ activeRuns: 1, queuedRuns: 2 });
    const { sessionId } = await tenant.newSession();
    const refused = await tenant.startRun(sessionId, slow);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("quota_exceeded");
    expect(refused.body.error.message).toMatch(/2 runs waiting for a slot, its queuedRuns quota/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    for (const workspace of workspaces) await releaseMarker(workspace, "quota-end");
    for (const id of runs) expect((await tenant.waitForRun(id, 30_000)).status).toBe("completed");
    expect((await tenant.get("/v1/usage")).body.usage).toMatchObject({ activeRuns: 0, queuedRuns: 0 });

    // tokensPerDay: counted from the usage the model reported.
    await patch({ tokensPerDay: 1000 });
    const wired = await tenant.newSession({ providerProfile: "wire" });
    for (let i = 0; i < 2; i++) {
      const started = await tenant.startRun(wired.sessionId, "hi");
      expect((await tenant.waitForRun(started.body.id, 30_000)).status).toBe("completed");
    }
    expect((await tenant.get("/v1/usage")).body.usage.tokensToday).toBe(1200);
    const overTokens = await tenant.startRun(wired.sessionId, "hi");
    expect(overTokens.status).toBe(429);
    expect(overTokens.body.error.message).toMatch(/used 1200 model tokens today \(UTC\), its tokensPerDay quota is 1000/);
    expect(Number(overTokens.headers.get("retry-after"))).toBeGreaterThan(0);
    await patch({ tokensPerDay: null });

    // storageBytes: file contents the tools kept count. (A run that passes it mid-way ends at its next step:
    // test/e2e/sub-agent-quotas.test.ts; here the quota is set once the file is kept.)
    const writer = await tenant.newSession();
    const wrote = await tenant.startRun(
      writer.sessionId,
      script([[{ tool: "write", args: { path: "big.txt", content: "x".repeat(200) } }], [{ text: "done" }]]),
    );
    expect((await tenant.waitForRun(wrote.body.id, 30_000)).status).toBe("completed");
    expect((await tenant.get("/v1/usage")).body.usage.storageBytes).toBeGreaterThanOrEqual(200);
    await patch({ storageBytes: 100 });
    const overStorage = await tenant.startRun(writer.sessionId, script([[{ text: "more" }]]));
    expect(overStorage.status).toBe(429);
    expect(overStorage.body.error.message).toMatch(/its storageBytes quota is 100/);
    await patch({ storageBytes: null });
    expect((await tenant.startRun(writer.sessionId, script([[{ text: "again" }]]))).status).toBe(202);
  }, 120_000);
});

describe("tool call slots", () => {
  it("X5: a tenant's toolCalls quota holds across two workers: never more of its calls run at once, each runs once, and another tenant's calls are not held back", async () => {
    await ensureWorker();
    await env.startWorker();
    const limited = await env.newTenant("limited tenant");
    const other = await env.newTenant("other tenant");
    const patched = await env.admin.request("PATCH", `/v1/tenants/${limited.tenantId}`, { quotas: { toolCalls: 3, activeRuns: 10 } });
    expect(patched.body.effectiveQuotas).toMatchObject({ toolCalls: 3 });
    // Four runs of five parallel probes: without the quota, twenty calls would run at once.
    const batch = script([
      Array.from({ length: 5 }, () => ({ tool: "probe", args: { marker: "slots", sleepMs: 400 } })),
      [{ text: "done" }],
    ]);
    const limitedRuns: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { sessionId } = await limited.newSession();
      limitedRuns.push((await limited.startRun(sessionId, batch)).body.id as string);
    }
    const { sessionId: otherSession } = await other.newSession();
    const otherRun = (await other.startRun(otherSession, batch)).body.id as string;
    // While they run, /v1/usage shows the tenant's running calls at its quota.
    await waitFor(
      async () => (await limited.get("/v1/usage")).body.usage.toolCalls === 3,
      20_000,
      "the limited tenant's calls at its quota",
    );
    for (const id of limitedRuns) expect((await limited.waitForRun(id, 60_000)).status).toBe("completed");
    expect((await other.waitForRun(otherRun, 60_000)).status).toBe("completed");

    /** The most calls of these runs that were running at one moment, from the times Postgres recorded. */
    const mostAtOnce = async (runIds: readonly string[]) => {
      const calls = await env.query<{ started_at: Date; ended_at: Date; status: string }>(
        "select started_at, ended_at, status from tool_calls where run_id = any($1)",
        [runIds],
      );
      expect(calls.map((call) => call.status)).toEqual(Array(calls.length).fill("succeeded"));
      const edges = calls.flatMap((call) => [[call.started_at.getTime(), 1] as const, [call.ended_at.getTime(), -1] as const]);
      // An end and a start at the same instant do not overlap: ends first.
      edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
      let running = 0;
      let most = 0;
      for (const [, delta] of edges) {
        running += delta;
        most = Math.max(most, running);
      }
      return { calls: calls.length, most };
    };
    expect(await mostAtOnce(limitedRuns)).toEqual({ calls: 20, most: 3 });
    // The other tenant has no such quota: its five calls ran together.
    expect(await mostAtOnce([otherRun])).toEqual({ calls: 5, most: 5 });
    // Each call ran once: one start line per call in each run's workspace.
    for (const id of limitedRuns) {
      const [{ session_id: sessionId }] = (await env.query<{ session_id: string }>("select session_id from runs where id = $1", [id])) as [
        { session_id: string },
      ];
      const starts = (await readMarkers(await env.workspaceOf(sessionId), "slots")).filter((line) => line.startsWith("start "));
      expect(starts.map((line) => line.split(" ")[1]).sort()).toEqual(["call_0_0", "call_0_1", "call_0_2", "call_0_3", "call_0_4"]);
    }
    expect((await limited.get("/v1/usage")).body.usage.toolCalls).toBe(0);
  }, 120_000);
});
