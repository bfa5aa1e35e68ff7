import { performance } from "node:perf_hooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../src/core/events.js";
import type { SessionId } from "../../src/ids.js";
import { readMarkers } from "../fixtures/test-tools.js";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { processGroup, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/**
 * SPEC D9 and D10 with production lease timings (30 s lease and BullMQ lock, 15 s stall
 * check): a worker's death must be noticed through its liveness record, within seconds,
 * not through its leases. Default liveness settings (1 s renewal, 3 s timeout).
 */
let env: TestEnv;
let client: ApiClient;
let wire: OpenAIWireServer;
const workers = processGroup();
const productionLeases = {
  FOYA_LEASE_MS: "30000",
  FOYA_STALLED_INTERVAL_MS: "15000",
  FOYA_SWEEP_GRACE_MS: "10000",
  FOYA_SWEEP_INTERVAL_MS: "5000",
};

/** The interrupted call's text, as the model must see it when the run carries on (D10). */
const interruptedText = /outcome is unknown and it may have partly run\. It will not be run again/;

beforeAll(async () => {
  // A model that asks for one long marker_sleep call, and once it sees a tool result answers with what it saw.
  wire = await startOpenAIWireServer(({ body }) => {
    const messages = body.messages as Array<{ role: string; content: unknown }>;
    const last = messages.at(-1);
    if (last?.role === "tool") {
      const seen = interruptedText.test(JSON.stringify(last.content)) ? "saw the interruption" : "saw a result";
      return sseScript([textChunk(seen), finishChunk("stop")]);
    }
    const marker = `wire-${messages.length}`;
    return sseScript([
      toolCallStartChunk(0, `call_${marker}`, "marker_sleep"),
      toolArgsChunk(0, JSON.stringify({ marker: "d10", sleepMs: 60_000 })),
      finishChunk("tool_calls"),
    ]);
  });
  const providersFile = await writeProvidersFile([
    { name: "wire", kind: "openai-chat", baseUrl: wire.baseUrl, model: "wire-model", apiKeyEnv: "WIRE_KEY" },
  ]);
  env = await createTestEnv({ ...productionLeases, FOYA_PROVIDERS_FILE: providersFile, WIRE_KEY: "sk-wire" });
  client = await env.newTenant();
});
afterEach(() => workers.killAll());
afterAll(async () => {
  await workers.killAll();
  await env?.close();
  await wire?.close();
});

/** Every event of a session with its arrival time, from before the run starts. */
async function recordEvents(sessionId: SessionId): Promise<{ events: Array<{ at: number; event: SessionEvent }>; stop(): void }> {
  const events: Array<{ at: number; event: SessionEvent }> = [];
  const stop = await env.services.bus.subscribe(sessionId, (event) => events.push({ at: performance.now(), event }));
  return { events, stop };
}

/** Two workers; answers the one whose tool wrote the marker's first line, once it has. */
async function twoWorkersAndTheOneRunning(
  workspace: string,
  marker: string,
  extra: Record<string, string> = {},
): Promise<{ running: FoyaProcess; other: FoyaProcess }> {
  const started = await Promise.all([workers.start("worker", { ...env.env, ...extra }), workers.start("worker", { ...env.env, ...extra })]);
  const [line] = await waitFor(
    async () => {
      const lines = await readMarkers(workspace, marker);
      return lines.length > 0 && lines;
    },
    20_000,
    "the tool to start",
  );
  const pid = Number(line!.split(" ")[0]);
  const running = started.find((child) => child.pid === pid);
  const other = started.find((child) => child.pid !== pid);
  if (!running || !other) throw new Error(`the marker names pid ${pid}, not one of the workers`);
  return { running, other };
}

describe("worker liveness (D9) and carrying on after an interruption (D10)", () => {
  it("D9: SIGKILL a worker while a tool runs: run_status recovering within 5 s, the call interrupted and the run moved on within 5 s more", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const recorder = await recordEvents(sessionId);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "marker_sleep", args: { marker: "d9", sleepMs: 60_000 } }], [{ text: "never" }]]),
    );
    const { running } = await twoWorkersAndTheOneRunning(workspace, "d9");

    running.kill("SIGKILL");
    const killedAt = performance.now();
    await running.exited;
    const ended = await client.waitForRun(run.body.id, 20_000);
    // The run's row can be read ended before its run_end message reaches this subscriber.
    await waitFor(async () => recorder.events.some(({ event }) => event.data.type === "run_end"), 10_000, "the run_end event");
    recorder.stop();

    const recovering = recorder.events.find(({ event }) => event.data.type === "run_status" && event.data.status === "recovering");
    expect(recovering, "a run_status recovering event").toBeDefined();
    expect(recovering!.event.data).toMatchObject({
      type: "run_status",
      status: "recovering",
      reason: expect.stringMatching(/stopped renewing its liveness record/),
    });
    const runEnd = recorder.events.find(({ event }) => event.data.type === "run_end");
    expect(recovering!.at - killedAt).toBeLessThan(5_000);
    expect(runEnd!.at - recovering!.at).toBeLessThan(5_000);

    expect(ended.status).toBe("interrupted");
    expect(ended.error.code).toBe("worker_lost");
    const [call] = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [run.body.id]);
    expect(call!.status).toBe("interrupted");
    expect(await readMarkers(workspace, "d9")).toHaveLength(1);
    // The dead worker's record says so; the living one is still listed.
    const [record] = await env.query<{ stop_reason: string }>("select stop_reason from workers where pid = $1", [running.pid]);
    expect(record!.stop_reason).toBe("lost");
  });

  it("D10: with onInterrupted continue (a run's override of its session's end), the next model step sees the honest tool message and the run completes; the side effect happened once", async () => {
    const { sessionId } = await client.newSession({ providerProfile: "wire" });
    expect((await client.get<{ onInterrupted: string }>(`/v1/sessions/${sessionId}`)).body.onInterrupted).toBe("end");
    const workspace = await env.workspaceOf(sessionId);
    const before = wire.requests.length;
    const run = await client.post<{ id: string; onInterrupted: string }>(`/v1/sessions/${sessionId}/runs`, {
      input: "go",
      onInterrupted: "continue",
    });
    expect(run.status).toBe(202);
    expect(run.body.onInterrupted).toBe("continue");
    const { running } = await twoWorkersAndTheOneRunning(workspace, "d10");

    running.kill("SIGKILL");
    await running.exited;
    const ended = await client.waitForRun(run.body.id, 20_000);
    expect(ended.status).toBe("completed");
    expect(ended.interruptions).toBe(1);

    // The second model request carried the honest message, and the model answered having seen it.
    const requests = wire.requests
      .slice(before)
      .map((request) => (request.body as { messages: Array<{ role: string; content: unknown }> }).messages);
    expect(requests).toHaveLength(2);
    expect(JSON.stringify(requests[1]!.at(-1)!.content)).toMatch(interruptedText);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.at(-1)).toMatchObject({ role: "assistant", content: { text: "saw the interruption" } });
    const [call] = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [run.body.id]);
    expect(call!.status).toBe("interrupted");
    // Started once, never again.
    expect(await readMarkers(workspace, "d10")).toHaveLength(1);
  });

  it("D10: a run carries on at most FOYA_MAX_CONTINUED_INTERRUPTIONS times, then ends interrupted saying so", async () => {
    const { sessionId } = await client.newSession({ onInterrupted: "continue" });
    const workspace = await env.workspaceOf(sessionId);
    const limitOne = { FOYA_MAX_CONTINUED_INTERRUPTIONS: "1" };
    const sleepStep = (marker: string) => [{ tool: "marker_sleep", args: { marker, sleepMs: 60_000 } }];
    const run = await client.startRun(sessionId, script([sleepStep("limit-1"), sleepStep("limit-2"), [{ text: "never" }]]));
    expect(run.body.onInterrupted).toBe("continue");

    const first = await twoWorkersAndTheOneRunning(workspace, "limit-1", limitOne);
    first.running.kill("SIGKILL");
    await first.running.exited;
    // Carried on: the second step's tool starts, on the surviving worker.
    const [line] = await waitFor(
      async () => {
        const lines = await readMarkers(workspace, "limit-2");
        return lines.length > 0 && lines;
      },
      20_000,
      "the next step's tool to start",
    );
    expect(Number(line!.split(" ")[0])).toBe(first.other.pid);
    first.other.kill("SIGKILL");
    await first.other.exited;
    // Its replacement starts while the dead worker's liveness record ages.
    await workers.start("worker", { ...env.env, ...limitOne });

    const ended = await client.waitForRun(run.body.id, 20_000);
    expect(ended.status).toBe("interrupted");
    expect(ended.interruptions).toBe(1);
    expect(ended.error.message).toMatch(/already carried on after 1 interruptions/);
    const calls = await env.query<{ status: string }>("select status from tool_calls where run_id = $1 order by step_index", [run.body.id]);
    expect(calls.map((call) => call.status)).toEqual(["interrupted", "interrupted"]);
    expect(await readMarkers(workspace, "limit-1")).toHaveLength(1);
    expect(await readMarkers(workspace, "limit-2")).toHaveLength(1);
    expectValidHistory(await client.messages(sessionId));
  });

  it("D9: a step job taken by a worker that died before claiming its run is enqueued again once the worker is found dead, not after its 30 s lock and the stall check", async () => {
    const dying = await workers.start("worker", { ...env.env, FOYA_FAILPOINTS: "worker.step_job_taken" });
    const { sessionId } = await client.newSession();
    const started = performance.now();
    const run = await client.startRun(sessionId, script([[{ text: "done" }]]));
    expect((await dying.exited).signal).toBe("SIGKILL");
    // The lock (30 s) and stall check (15 s) stay as in production; the sweep that asks BullMQ about the run's job
    // looks every 300 ms at runs still for 1 s (production: every 5 s, for 10 s), so what is timed is the death's discovery.
    await workers.start("worker", { ...env.env, FOYA_SWEEP_GRACE_MS: "1000", FOYA_SWEEP_INTERVAL_MS: "300" });
    expect((await client.waitForRun(run.body.id, 40_000)).status).toBe("completed");
    // Found dead after the 3 s liveness timeout, then the next sweep: well before the lock (30 s) and stall check (15 s) free the job.
    expect(performance.now() - started).toBeLessThan(25_000);
  });

  it("D9: GET /v1/admin/workers lists live workers with their pid (as printed at start-up) and held jobs; a drained one leaves the list, a killed one drops off after the timeout", async () => {
    const [a, b] = await Promise.all([workers.start("worker", env.env), workers.start("worker", env.env)]);
    // The workers an earlier test killed stay listed until their liveness timeout (they age while these two start): this test's list holds its own only.
    await waitFor(
      async () =>
        (await env.admin.get<{ workers: Array<{ pid: number }> }>("/v1/admin/workers")).body.workers.every(
          (worker) => worker.pid === a!.pid || worker.pid === b!.pid,
        ),
      8_000,
      "earlier tests' workers to drop off",
    );
    for (const child of [a!, b!]) await child.waitForOutput(new RegExp(`^FOYA_WORKER_PID=${child.pid}$`, "m"), 5_000);
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "marker_sleep", args: { marker: "admin", sleepMs: 60_000 } }], [{ text: "never" }]]),
    );
    const [line] = await waitFor(
      async () => {
        const lines = await readMarkers(workspace, "admin");
        return lines.length > 0 && lines;
      },
      20_000,
      "the tool to start",
    );
    const busyPid = Number(line!.split(" ")[0]);

    type Listed = {
      workers: Array<{
        id: string;
        host: string;
        pid: number;
        startedAt: string;
        lastSeenAt: string;
        jobs: Record<string, number>;
        commands: number;
      }>;
    };
    const list = async () => {
      const response = await env.admin.get<Listed>("/v1/admin/workers");
      expect(response.status).toBe(200);
      return response.body.workers;
    };
    // The held batch job shows at the next renewal.
    const listed = await waitFor(
      async () => {
        const live = await list();
        return live.find((worker) => worker.pid === busyPid && worker.jobs.tools === 1) && live;
      },
      5_000,
      "the busy worker to show its job",
    );
    expect(listed.map((worker) => worker.pid).sort()).toEqual([a!.pid, b!.pid].sort());
    for (const worker of listed) expect(worker).toMatchObject({ host: expect.any(String), commands: 0, jobs: { steps: 0 } });
    // Tenants cannot see it.
    expect((await client.get("/v1/admin/workers")).status).toBe(401);

    const idle = busyPid === a!.pid ? b! : a!;
    const busy = busyPid === a!.pid ? a! : b!;
    idle.kill("SIGTERM");
    expect((await idle.exited).code).toBe(0);
    expect((await list()).map((worker) => worker.pid)).toEqual([busy.pid]);
    busy.kill("SIGKILL");
    await busy.exited;
    await waitFor(async () => (await list()).length === 0, 8_000, "the killed worker to drop off");
    await client.post(`/v1/runs/${run.body.id}/cancel`, {});
  });
});
