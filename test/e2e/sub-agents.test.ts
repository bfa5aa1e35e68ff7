import { describe, expect, it } from "vitest";
import { narrowLimits } from "../../src/agents/child-limits.js";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, textOf, waitFor, type ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true, fullAccess: true });

/** The child the parent's agent call started, once it exists. */
async function childOf(
  api: ApiClient,
  sessionId: string,
): Promise<{ childSessionId: string; childRunId: string; depth: number; callId: string }> {
  return waitFor(async () => (await api.events(sessionId)).find((e) => e.type === "subagent_start")?.data, 20_000, "a sub-agent to start");
}

async function runRow(
  runId: string,
): Promise<{ status: string; next_job: unknown; lease_owner: string | null; error: { code: string } | null }> {
  const [row] = await env.query<{ status: string; next_job: unknown; lease_owner: string | null; error: { code: string } | null }>(
    "select status, next_job, lease_owner, error from runs where id = $1",
    [runId],
  );
  if (!row) throw new Error(`no run ${runId}`);
  return row;
}

describe("sub-agents", () => {
  it("A1: a child run completes and its final answer is the agent call's result; the parent waits holding no worker", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const childScript = script([[{ tool: "noop", args: { marker: "a1-child" } }], [{ delayMs: 1500 }, { text: "The answer is 42." }]]);
    const run = await client.startRun(sessionId, script([[{ tool: "agent", args: { task: childScript } }], [{ text: "parent done" }]]));
    const child = await childOf(client, sessionId);
    expect(child.depth).toBe(1);

    // While the child works, the parent is parked: running, with no job and no lease (no worker holds it).
    await waitFor(
      async () => (await runRow(child.childRunId)).status === "running" && (await runRow(run.body.id)).next_job === null,
      20_000,
      "the parent to park",
    );
    const parked = await runRow(run.body.id);
    expect(parked).toMatchObject({ status: "running", next_job: null, lease_owner: null });
    const { toolQueue } = env.services.dispatcher;
    const stepQueue = env.services.dispatcher.stepQueueFor(run.body.id);
    const live = [
      ...(await stepQueue.getJobs(["active", "waiting", "delayed"])),
      ...(await toolQueue.getJobs(["active", "waiting", "delayed"])),
    ].filter((job) => job?.data.runId === run.body.id);
    expect(live).toEqual([]);

    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect((await client.get(`/v1/runs/${child.childRunId}`)).body.status).toBe("completed");
    const [agentResult] = await client.toolMessages(sessionId);
    expect(agentResult).toMatchObject({ name: "agent", status: "succeeded", isError: false });
    expect(textOf(agentResult)).toBe("The answer is 42.");
    expect(await readMarkers(workspace, "a1-child")).toHaveLength(1);

    const childSession = await client.get(`/v1/sessions/${child.childSessionId}`);
    expect(childSession.body).toMatchObject({
      depth: 1,
      approvalMode: "auto",
      parent: { sessionId, runId: run.body.id, callId: child.callId },
    });
    // The child's events are its own session's; the parent's show its start and the call's end.
    const childEvents = await client.events(child.childSessionId);
    expect(childEvents.map((e) => e.type)).toEqual(expect.arrayContaining(["run_start", "tool_end", "run_end"]));
    const parentEnds = (await client.events(sessionId)).filter((e) => e.type === "tool_end" && e.data.name === "agent");
    expect(parentEnds).toHaveLength(1);
    expectValidHistory(await client.messages(sessionId));
    expectValidHistory(await client.messages(child.childSessionId));
  });

  it("A1: a child's tools and mode are never wider than its parent's", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto", toolAllowList: ["agent", "noop", "list", "read"] });
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "agent", args: { task: "x", tools: ["write"] } },
          { tool: "agent", args: { task: "x", approvalMode: "full_access" } },
          { tool: "agent", args: { task: "x", tools: ["no_such_tool"] } },
          { tool: "agent", args: { task: script([[{ text: "narrow child" }]]), tools: ["noop"], readOnly: true, approvalMode: "manual" } },
        ],
        [{ text: "done" }],
      ]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const results = await client.toolMessages(sessionId);
    expect(results.map((m) => [m.status, m.isError])).toEqual([
      ["failed", true],
      ["failed", true],
      ["failed", true],
      ["succeeded", false],
    ]);
    expect(textOf(results[0])).toContain('"write"');
    expect(textOf(results[3])).toBe("narrow child");
    const child = await childOf(client, sessionId);
    const childSession = (await client.get(`/v1/sessions/${child.childSessionId}`)).body;
    expect(childSession).toMatchObject({ toolAllowList: ["noop"], runMode: "read_only", approvalMode: "manual" });
    const codes = await env.query<{ error_code: string | null }>(
      "select error_code from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(codes.map((row) => row.error_code)).toEqual(["agent_tools_not_allowed", "agent_mode_not_allowed", "agent_unknown_tool", null]);

    // A read-only parent gets read-only children, whatever they ask.
    const parent = { toolAllowList: null, runMode: "read_only" as const, approvalMode: "auto" as const, depth: 0 };
    const narrowed = narrowLimits(parent, { task: "x", readOnly: false }, { maxDepth: 2, isTool: () => true });
    expect(narrowed).toEqual({ ok: true, limits: { toolAllowList: null, runMode: "read_only", approvalMode: "auto", depth: 1 } });
  });

  it("A1: sub-agents nest only to the depth limit; a deeper one is refused with an is_error result", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    // FOYA_AGENT_MAX_DEPTH is 2: the grandchild (depth 2) may not start another level.
    const greatGrandchildScript = script([[{ text: "never runs" }]]);
    const grandchildScript = script([[{ tool: "agent", args: { task: greatGrandchildScript } }], [{ text: "grandchild answer" }]]);
    const childScript = script([[{ tool: "agent", args: { task: grandchildScript } }], [{ text: "child relays: grandchild answer" }]]);
    const run = await client.startRun(sessionId, script([[{ tool: "agent", args: { task: childScript } }], [{ text: "top done" }]]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(textOf((await client.toolMessages(sessionId))[0])).toBe("child relays: grandchild answer");

    const child = await childOf(client, sessionId);
    const grandchild = await childOf(client, child.childSessionId);
    expect([child.depth, grandchild.depth]).toEqual([1, 2]);
    // No session was started below the grandchild.
    expect(await env.query("select id from sessions where parent_session_id = $1", [grandchild.childSessionId])).toEqual([]);
    // At the limit the agent tool is not offered, and a call of it anyway is refused.
    const refused = await client.toolMessages(grandchild.childSessionId);
    expect(refused[0]).toMatchObject({ name: "agent", status: "failed", isError: true });
    expect(textOf(refused[0])).toContain("was not offered");
    const agentIn = async (id: string) =>
      (await client.get(`/v1/tools?session=${id}`)).body.tools.find((t: { name: string }) => t.name === "agent");
    expect(await agentIn(grandchild.childSessionId)).toMatchObject({ exposedNow: false });
    expect(await agentIn(child.childSessionId)).toMatchObject({ exposedNow: true });
    // The start itself checks the depth too, whatever a step offered.
    const beyond = narrowLimits(
      { toolAllowList: null, runMode: "normal", approvalMode: "auto", depth: 2 },
      { task: "x" },
      { maxDepth: 2, isTool: () => true },
    );
    expect(beyond).toMatchObject({ ok: false, errorCode: "agent_depth_limit" });
  });

  it("A1: cancelling the parent mid-child cancels the child; every call gets a result", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "full_access" });
    const childScript = script([[{ tool: "marker_sleep", args: { marker: "a1-cancel", sleepMs: 30_000 } }], [{ text: "too late" }]]);
    const run = await client.startRun(sessionId, script([[{ tool: "agent", args: { task: childScript } }], [{ text: "never" }]]));
    const child = await childOf(client, sessionId);
    const workspace = await env.workspaceOf(sessionId);
    await waitFor(async () => (await readMarkers(workspace, "a1-cancel")).length === 1, 20_000, "the child's tool to start");

    const cancelled = await client.post(`/v1/runs/${run.body.id}/cancel`, {});
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("cancelled");
    const childRun = await runRow(child.childRunId);
    expect(childRun).toMatchObject({ status: "cancelled", error: { code: "parent_ended" } });
    const [agentResult] = await client.toolMessages(sessionId);
    expect(agentResult).toMatchObject({ name: "agent", status: "cancelled", isError: true });
    const [childCall] = await client.toolMessages(child.childSessionId);
    expect(childCall).toMatchObject({ name: "marker_sleep", status: "cancelled" });
    expectValidHistory(await client.messages(sessionId));
    expectValidHistory(await client.messages(child.childSessionId));
    // The parent stays cancelled: the child's end delivered nothing over it, and no job is left to.
    await env.settled();
    expect((await client.toolMessages(sessionId)).filter((m) => m.name === "agent")).toHaveLength(1);
  });

  it("A1: a child's approval request reaches the same approval API; approving it completes the child, then the parent", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const childScript = script([[{ tool: "marker_sleep", args: { marker: "a1-approve" } }], [{ text: "wrote the marker" }]]);
    const run = await client.startRun(sessionId, script([[{ tool: "agent", args: { task: childScript } }], [{ text: "parent saw it" }]]));
    const child = await childOf(client, sessionId);
    const approval = await waitFor(
      async () =>
        (await client.get("/v1/approvals?status=pending")).body.approvals.find((a: { runId: string }) => a.runId === child.childRunId),
      20_000,
      "the child's approval",
    );
    expect(approval).toMatchObject({ sessionId: child.childSessionId, call: { tool: "marker_sleep" } });
    expect((await client.events(child.childSessionId)).some((e) => e.type === "approval_request")).toBe(true);
    // The parent waits for its child, not for a human.
    expect((await client.get(`/v1/runs/${run.body.id}`)).body.status).toBe("running");
    expect(await readMarkers(workspace, "a1-approve")).toHaveLength(0);

    expect((await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" })).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "a1-approve")).toHaveLength(1);
    expect(textOf((await client.toolMessages(sessionId))[0])).toBe("wrote the marker");
  });

  it("A1: a child that fails gives the agent call an is_error result and the parent goes on", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "agent", args: { task: script([[{ fail: "model exploded" }]]) } }], [{ text: "handled" }]]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const [agentResult] = await client.toolMessages(sessionId);
    expect(agentResult).toMatchObject({ name: "agent", status: "failed", isError: true });
    expect(textOf(agentResult)).toContain("The sub-agent failed");
    expect(textOf(agentResult)).toContain("model exploded");
  });

  it("A1: two sub-agents run at once; each answer returns to its own call, in model order", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const slow = script([[{ delayMs: 1200 }, { text: "slow answer" }]]);
    const fast = script([[{ text: "fast answer" }]]);
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "agent", args: { task: slow } },
          { tool: "agent", args: { task: fast } },
        ],
        [{ text: "both back" }],
      ]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const results = await client.toolMessages(sessionId);
    expect(results.map(textOf)).toEqual(["slow answer", "fast answer"]);
    const starts = (await client.events(sessionId)).filter((e) => e.type === "subagent_start");
    expect(starts).toHaveLength(2);
    // They overlapped: the fast child (the second call) ended before the slow one did.
    const ended = async (runId: string) => new Date((await client.get(`/v1/runs/${runId}`)).body.endedAt).getTime();
    const children = await env.query<{ child_run_id: string }>(
      "select child_run_id from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    const [slowRun, fastRun] = children.map((row) => row.child_run_id) as [string, string];
    expect(await ended(fastRun)).toBeLessThan(await ended(slowRun));
    expectValidHistory(await client.messages(sessionId));
  });

  it("A1: a parent waiting on both a sub-agent and a decision shows awaiting_approval, and resumes after both", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "agent", args: { task: script([[{ delayMs: 500 }, { text: "child done" }]]) } },
          { tool: "marker_sleep", args: { marker: "a1-both" } },
        ],
        [{ text: "parent done" }],
      ]),
    );
    const approval = await waitFor(
      async () => (await client.get(`/v1/approvals?status=pending&runId=${run.body.id}`)).body.approvals[0],
      20_000,
      "the parent's approval",
    );
    const child = await childOf(client, sessionId);
    // The child ends while the decision is still pending: the parent stays parked for the human.
    await waitFor(async () => (await runRow(child.childRunId)).status === "completed", 20_000, "the child to end");
    await waitFor(async () => (await runRow(run.body.id)).status === "awaiting_approval", 20_000, "the parent to park for the decision");
    expect(await readMarkers(workspace, "a1-both")).toHaveLength(0);
    expect((await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" })).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect((await client.toolMessages(sessionId)).map(textOf)[0]).toBe("child done");
    expect(await readMarkers(workspace, "a1-both")).toHaveLength(1);
  });

  it("A1: cancelling only the child gives the parent's call an is_error result, and the parent goes on", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "agent", args: { task: script([[{ delayMs: 20_000 }, { text: "never" }]]) } }], [{ text: "parent handled it" }]]),
    );
    const child = await childOf(client, sessionId);
    await waitFor(async () => (await runRow(child.childRunId)).status === "running", 20_000, "the child to run");
    expect((await client.post(`/v1/runs/${child.childRunId}/cancel`, {})).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const [agentResult] = await client.toolMessages(sessionId);
    expect(agentResult).toMatchObject({ status: "failed", isError: true });
    expect(textOf(agentResult)).toContain("The sub-agent was cancelled");
    const [row] = await env.query<{ error_code: string }>("select error_code from tool_calls where run_id = $1", [run.body.id]);
    expect(row?.error_code).toBe("agent_cancelled");
  });

  it("A1: deleting the parent's session cancels its sub-agent", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    await client.startRun(
      sessionId,
      script([[{ tool: "agent", args: { task: script([[{ delayMs: 20_000 }, { text: "never" }]]) } }], [{ text: "never" }]]),
    );
    const child = await childOf(client, sessionId);
    expect((await client.delete(`/v1/sessions/${sessionId}`)).status).toBe(204);
    expect(await runRow(child.childRunId)).toMatchObject({ status: "cancelled", error: { code: "parent_ended" } });
  });

  it("A1: another tenant cannot see or cancel a tenant's sub-agent", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "agent", args: { task: script([[{ delayMs: 1000 }, { text: "mine" }]]) } }], [{ text: "ok" }]]),
    );
    const child = await childOf(client, sessionId);
    const other = await env.newTenant();
    expect((await other.get(`/v1/sessions/${child.childSessionId}`)).status).toBe(404);
    expect((await other.post(`/v1/runs/${child.childRunId}/cancel`, {})).status).toBe(404);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
  });
});
