import { describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, waitFor } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true });

describe("what a running tool sees", () => {
  it("L1, D4: progress a tool reports after its call was answered is dropped, like a stale result", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ tool: "late_progress", args: { delayMs: 300 } }], [{ text: "done" }]]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    // The tool marks when its late report was recorded or dropped.
    await waitFor(
      async () => (await readMarkers(await env.workspaceOf(sessionId), "late-progress")).length === 1,
      10_000,
      "the late report to settle",
    );
    const progress = (await client.events(sessionId))
      .filter((e) => e.type === "tool_update" && e.data.progress !== undefined)
      .map((e) => e.data.progress);
    expect(progress).toEqual(["while running"]);
  });

  it("L3: a tool receives an explicit context, and its progress reaches clients as tool_update", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "manual", toolAllowList: ["context_echo", "read"] });
    const run = await client.startRun(sessionId, script([[{ tool: "context_echo", args: {} }], [{ text: "ok" }]]));
    await client.waitForRun(run.body.id);
    const [row] = await env.query<{ text: string }>("select result->0->>'text' as text from tool_calls where run_id = $1", [run.body.id]);
    const [tenant] = await env.query<{ tenant_id: string }>("select tenant_id from sessions where id = $1", [sessionId]);
    expect(JSON.parse(row!.text)).toEqual({
      tenantId: tenant!.tenant_id,
      sessionId,
      runId: run.body.id,
      projectId,
      workspaceRoot: ".",
      processLimits: env.config.toolLimits,
      approvalMode: "manual",
      provider: { profile: "scripted", model: "scripted" },
      exposedTools: ["context_echo", "read"],
      signalAborted: false,
      canReport: "function",
      canActivate: "function",
      canStore: "function",
      canStartCommands: "function",
      canKeepTasks: "function",
      canStartSubAgents: "function",
      canJournalWrites: "function",
    });
    const progress = (await client.events(sessionId)).filter((e) => e.type === "tool_update" && e.data.progress);
    expect(progress.map((e) => e.data.progress).sort()).toEqual(["almost", "halfway"]);
    expect(progress.every((e) => e.data.callId === "call_0_0")).toBe(true);
  });

  it("C1: cancelling a run aborts its running tool, ends the run cancelled, and a later cancel changes nothing", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "c1", sleepMs: 60_000 } }]]));
    await waitFor(async () => (await readMarkers(workspace, "c1")).length === 1, 20_000, "the tool to start");
    expect((await client.post(`/v1/runs/${run.body.id}/cancel`)).body.status).toBe("cancelled");
    await waitFor(async () => (await readMarkers(workspace, "c1-aborted")).length === 1, 10_000, "the tool to see its abort signal");
    const [call] = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [run.body.id]);
    expect(call!.status).toBe("cancelled");
    expectValidHistory(await client.messages(sessionId));

    const eventsBefore = (await client.events(sessionId)).length;
    const again = await client.post(`/v1/runs/${run.body.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.current.status).toBe("cancelled");
    expect((await client.events(sessionId)).length).toBe(eventsBefore);
  });

  it("D11: six racing cancels of one run: exactly one cancels, the others answer 409 with the run's state", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "d11-cancel", sleepMs: 60_000 } }]]));
    await waitFor(async () => (await readMarkers(workspace, "d11-cancel")).length === 1, 20_000, "the tool to start");
    const answers = await Promise.all(Array.from({ length: 6 }, () => client.post(`/v1/runs/${run.body.id}/cancel`)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    for (const loser of answers.filter((answer) => answer.status === 409))
      expect(loser.body.error.current).toMatchObject({ id: run.body.id, status: "cancelled" });
    expect((await client.events(sessionId)).filter((event) => event.type === "run_end")).toHaveLength(1);
  });

  it("C1, D11: cancelling a completed run changes nothing and answers 409 with its state; a queued one is cancelled before it starts", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "quick" }]]));
    await client.waitForRun(run.body.id);
    const after = await client.post(`/v1/runs/${run.body.id}/cancel`);
    expect(after.status).toBe(409);
    expect(after.body.error).toMatchObject({ code: "conflict", current: { id: run.body.id, status: "completed" } });

    const busy = await client.newSession();
    const first = await client.startRun(
      busy.sessionId,
      script([[{ tool: "marker_sleep", args: { marker: "c1q", sleepMs: 500 } }], [{ text: "a" }]]),
    );
    const waiting = await client.startRun(busy.sessionId, script([[{ text: "never" }]]), "enqueue");
    expect((await client.post(`/v1/runs/${waiting.body.id}/cancel`)).body.status).toBe("cancelled");
    expect((await client.waitForRun(first.body.id)).status).toBe("completed");
    const messages = await client.messages(busy.sessionId);
    expect(messages.some((m) => m.content.text === "never")).toBe(false);
  });

  it("update_tasks stores the session's task list and announces it", async () => {
    const { sessionId } = await client.newSession();
    const tasks = [
      { title: "read the code", status: "done" },
      { title: "write the fix", status: "in_progress" },
    ];
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "update_tasks", args: { tasks } },
          { tool: "update_tasks", args: { tasks: [{ title: "x", status: "later" }] } },
        ],
        [{ text: "ok" }],
      ]),
    );
    await client.waitForRun(run.body.id);
    expect((await client.get(`/v1/sessions/${sessionId}`)).body.tasks).toEqual(tasks);
    const announced = (await client.events(sessionId)).filter((e) => e.type === "tasks_updated");
    expect(announced.map((e) => e.data.tasks)).toEqual([tasks]);
    const [, invalid] = await env.query<{ error_code: string }>("select error_code from tool_calls where run_id = $1 order by call_index", [
      run.body.id,
    ]);
    expect(invalid!.error_code).toBe("invalid_arguments");
  });
});
