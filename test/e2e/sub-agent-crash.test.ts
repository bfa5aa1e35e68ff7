import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, textOf, waitFor, type ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { processGroup, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
const processes = processGroup();

const startWorker = (extra: Record<string, string> = {}): Promise<FoyaProcess> => processes.start("worker", { ...env.env, ...extra });

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant("tenant", { fullAccess: true });
});
afterAll(async () => {
  await processes.killAll();
  await env?.close();
});

describe("sub-agents across worker crashes", () => {
  it("A1: a worker SIGKILLed while the parent waits does not lose the child's result", async () => {
    const first = await startWorker();
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    // The child's model step streams slowly, so the kill lands while it runs and the parent is parked.
    const childScript = script([[{ text: "child answer survives", chunks: 20 }]], { chunkDelayMs: 150 });
    const run = await client.startRun(sessionId, script([[{ tool: "agent", args: { task: childScript } }], [{ text: "parent done" }]]));
    const child = await waitFor(
      async () => (await client.events(sessionId)).find((e) => e.type === "subagent_start")?.data,
      20_000,
      "the sub-agent",
    );
    await waitFor(
      async () => (await client.events(child.childSessionId)).some((e) => e.type === "text_delta"),
      20_000,
      "the child to stream",
    );
    // The parent parks with no job while its child works (its batch parks just after the child starts, so wait for it).
    await waitFor(
      async () => {
        const [parked] = await env.query<{ status: string; next_job: unknown }>("select status, next_job from runs where id = $1", [
          run.body.id,
        ]);
        return parked?.status === "running" && parked.next_job === null;
      },
      20_000,
      "the parent to park",
    );
    expect((await client.events(child.childSessionId)).some((e) => e.type === "run_end")).toBe(false);

    first.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    await startWorker();

    expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
    const agentResults = (await client.toolMessages(sessionId)).filter((m) => m.name === "agent");
    expect(agentResults).toHaveLength(1);
    expect(agentResults[0]).toMatchObject({ status: "succeeded", isError: false });
    expect(textOf(agentResults[0])).toBe("child answer survives");
    // The child's step ran again on the second worker under a new attempt; only one answer was kept.
    const [step] = await env.query<{ attempt: number }>("select attempt from steps where run_id = $1 and index = 0", [child.childRunId]);
    expect(step?.attempt).toBeGreaterThanOrEqual(2);
    expectValidHistory(await client.messages(sessionId));
    expectValidHistory(await client.messages(child.childSessionId));
  });

  it("A1, D3: a child's tool cut off by a worker SIGKILL is interrupted, never run again, and the parent learns it and goes on", async () => {
    await processes.killAll();
    const first = await startWorker();
    const { sessionId } = await client.newSession({ approvalMode: "full_access" });
    const childScript = script([[{ tool: "marker_sleep", args: { marker: "a1-cut", sleepMs: 30_000 } }], [{ text: "never" }]]);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "agent", args: { task: childScript } }], [{ text: "parent noted the loss" }]]),
    );
    const child = await waitFor(
      async () => (await client.events(sessionId)).find((e) => e.type === "subagent_start")?.data,
      20_000,
      "the sub-agent",
    );
    const workspace = await env.workspaceOf(sessionId);
    await waitFor(async () => (await readMarkers(workspace, "a1-cut")).length === 1, 20_000, "the child's tool to start");

    first.kill("SIGKILL");
    await first.exited;
    await startWorker();
    expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
    expect((await client.get(`/v1/runs/${child.childRunId}`)).body.status).toBe("interrupted");
    const [agentResult] = await client.toolMessages(sessionId);
    expect(agentResult).toMatchObject({ name: "agent", status: "failed", isError: true });
    expect(textOf(agentResult)).toContain("The sub-agent was interrupted");
    expect(await readMarkers(workspace, "a1-cut")).toHaveLength(1);
    expectValidHistory(await client.messages(sessionId));
    expectValidHistory(await client.messages(child.childSessionId));
  });

  it("A1: a worker killed right after starting a child, before its job was enqueued: the child still runs and the parent gets its answer", async () => {
    // Only the worker that will crash may take the parent's batch.
    await processes.killAll();
    const crashing = await startWorker({ FOYA_FAILPOINTS: "worker.after_subagent_start" });
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "agent", args: { task: script([[{ text: "started before the crash" }]]) } }], [{ text: "parent done" }]]),
    );
    expect((await crashing.exited).signal).toBe("SIGKILL");
    // The child and its link to the call committed; its first job was never enqueued, and the parent's batch job died with the worker.
    const [linked] = await env.query<{ child_run_id: string | null; status: string }>(
      "select child_run_id, status from tool_calls where run_id = $1",
      [run.body.id],
    );
    expect(linked).toMatchObject({ status: "running", child_run_id: expect.stringMatching(/^run_/) });

    await startWorker();
    expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
    const [agentResult] = await client.toolMessages(sessionId);
    expect(agentResult).toMatchObject({ name: "agent", status: "succeeded" });
    expect(textOf(agentResult)).toBe("started before the crash");
    const children = await env.query<{ id: string }>("select id from sessions where parent_run_id = $1", [run.body.id]);
    expect(children).toHaveLength(1);
    expectValidHistory(await client.messages(sessionId));
  });
});
