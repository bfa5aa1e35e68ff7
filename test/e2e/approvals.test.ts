import { mkdir, symlink } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true, fullAccess: true });

/** The run's pending approvals, once there are `count` of them. */
async function pendingApprovals(api: ApiClient, runId: string, count = 1): Promise<any[]> {
  return waitFor(
    async () => {
      const listed = await api.get(`/v1/approvals?status=pending&runId=${runId}`);
      return listed.body.approvals.length >= count ? listed.body.approvals : null;
    },
    20_000,
    "pending approvals",
  );
}

async function waitForStatus(runId: string, status: string): Promise<void> {
  await waitFor(async () => (await client.get(`/v1/runs/${runId}`)).body.status === status, 20_000, `run ${status}`);
}

async function toolMessage(sessionId: string, name: string): Promise<any> {
  return (await client.messages(sessionId)).find((m) => m.role === "tool" && m.content.name === name)?.content;
}

describe("approvals", () => {
  it("S11: the gateway never asks about a call the tool would refuse anyway: it denies it with the tool's reason", async () => {
    for (const approvalMode of ["auto", "manual"]) {
      const { sessionId } = await client.newSession({ approvalMode });
      const workspace = await env.workspaceOf(sessionId);
      await symlink("/etc", path.join(workspace, "etc-link"));
      await mkdir(path.join(workspace, ".git"), { recursive: true });
      const calls = [
        { tool: "read", args: { path: "/etc/hostname" } },
        { tool: "write", args: { path: "../elsewhere.txt", content: "x" } },
        { tool: "edit", args: { path: "etc-link/hostname", old_string: "a", new_string: "b" } },
        { tool: "write", args: { path: ".git/hooks/pre-commit", content: "evil" } },
        { tool: "delete", args: { path: ".git" } },
        { tool: "list", args: { pattern: "/etc/*" } },
      ];
      const run = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
      expect((await client.waitForRun(run.body.id)).status, approvalMode).toBe("completed");
      const results = await env.query<{ status: string; error_code: string }>(
        "select status, error_code from tool_calls where run_id = $1 order by call_index",
        [run.body.id],
      );
      // Denied at the gate (where it would have asked) or refused by the tool (where the gateway let it through): never a question.
      for (const result of results) expect(["denied", "failed"], approvalMode).toContain(result.status);
      expect(
        results.map((result) => result.error_code),
        approvalMode,
      ).toEqual([
        "path_outside_workspace",
        "path_outside_workspace",
        "path_outside_workspace",
        "protected_path",
        "protected_path",
        "path_outside_workspace",
      ]);
      expect(await env.query("select id from approvals where run_id = $1", [run.body.id])).toEqual([]);
      expect((await client.events(sessionId)).filter((event) => event.type === "approval_request")).toEqual([]);
      const refused = (await client.messages(sessionId)).find((m) => m.role === "tool" && m.content.name === "read")?.content;
      expect(refused.content[0].text).toMatch(/The path "\/etc\/hostname" is outside the workspace/);
    }
  });

  it("X3, D11: a repeated identical decision changes nothing and answers 409 with the decision that stands; a conflicting one is refused with 409", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "x3-double" } }], [{ text: "done" }]]));
    const [approval] = await pendingApprovals(client, run.body.id);
    expect(approval).toMatchObject({
      status: "pending",
      call: { tool: "marker_sleep", arguments: JSON.stringify({ marker: "x3-double" }) },
      requestReason: expect.any(String),
    });
    await waitForStatus(run.body.id, "awaiting_approval");

    const first = await client.post(`/v1/approvals/${approval.id}`, { decision: "approve", reason: "looks fine" });
    expect(first.status).toBe(200);
    const again = await client.post(`/v1/approvals/${approval.id}`, { decision: "approve", reason: "looks fine" });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/already approved with the same decision; nothing changed/);
    expect(again.body.error.current).toMatchObject({ id: approval.id, status: "approved", decidedAt: first.body.decidedAt });
    const conflicting = await client.post(`/v1/approvals/${approval.id}`, { decision: "deny" });
    expect(conflicting.status).toBe(409);
    expect(conflicting.body.error.code).toBe("approval_conflict");

    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "x3-double")).toHaveLength(1);
    const [keyRow] = await env.query<{ decided_by_key_id: string; key_tenant: string; approval_tenant: string }>(
      `select a.decided_by_key_id, k.tenant_id as key_tenant, a.tenant_id as approval_tenant
       from approvals a join api_keys k on k.id = a.decided_by_key_id where a.id = $1`,
      [approval.id],
    );
    expect(keyRow?.key_tenant).toBe(keyRow?.approval_tenant);
    const events = await client.events(sessionId);
    expect(events.filter((e) => e.type === "approval_request")).toHaveLength(1);
    const resolved = events.filter((e) => e.type === "approval_resolved");
    expect(resolved).toHaveLength(1);
    expect(resolved[0].data).toMatchObject({ approvalId: approval.id, status: "approved", edited: false });
    expect(events.map((e) => e.type)).toContain("run_status");
    expectValidHistory(await client.messages(sessionId));
  });

  it("X3: a denial returns an is_error result with the reason to the model, and the run goes on", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "marker_sleep", args: { marker: "x3-deny" } }], [{ text: "understood" }]]),
    );
    const [approval] = await pendingApprovals(client, run.body.id);
    const denied = await client.post(`/v1/approvals/${approval.id}`, { decision: "deny", reason: "not on a Friday" });
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({ status: "denied", reason: "not on a Friday", decidedByKeyId: expect.any(String) });
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "x3-deny")).toHaveLength(0);
    const message = await toolMessage(sessionId, "marker_sleep");
    expect(message).toMatchObject({ status: "denied", isError: true });
    expect(message.content[0].text).toContain("not on a Friday");
    expectValidHistory(await client.messages(sessionId));
  });

  it("X3: approve with edited arguments runs the edit, validated again and recorded as such", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "x3-original" } }], [{ text: "done" }]]));
    const [approval] = await pendingApprovals(client, run.body.id);

    const invalid = await client.post(`/v1/approvals/${approval.id}`, { decision: "approve", arguments: { marker: 5 } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.message).toMatch(/edited arguments are invalid/);
    expect((await client.get(`/v1/approvals/${approval.id}`)).body.status).toBe("pending");

    const edited = await client.post(`/v1/approvals/${approval.id}`, { decision: "approve", arguments: { marker: "x3-edited" } });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ status: "approved", editedArguments: JSON.stringify({ marker: "x3-edited" }) });
    // The call row keeps what the model produced (T2); the approval records the edit.
    expect(edited.body.call.arguments).toBe(JSON.stringify({ marker: "x3-original" }));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "x3-edited")).toHaveLength(1);
    expect(await readMarkers(workspace, "x3-original")).toHaveLength(0);
    const message = await toolMessage(sessionId, "marker_sleep");
    expect(message.content[0].text).toMatch(/edited the arguments/);
    const resolved = (await client.events(sessionId)).find((e) => e.type === "approval_resolved");
    expect(resolved.data).toMatchObject({ status: "approved", edited: true });
  });

  it("X3: an unanswered approval expires by policy, counts as denied, and a late decision gets 409", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "manual" });
    expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, { approvalTtlSeconds: 1 })).status).toBe(200);
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "x3-expire" } }], [{ text: "ok" }]]));
    const [approval] = await pendingApprovals(client, run.body.id);
    expect(new Date(approval.expiresAt).getTime() - new Date(approval.createdAt).getTime()).toBeLessThanOrEqual(2_000);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const after = await client.get(`/v1/approvals/${approval.id}`);
    expect(after.body).toMatchObject({ status: "expired", decidedByKeyId: null });
    const late = await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" });
    expect(late.status).toBe(409);
    expect(await readMarkers(workspace, "x3-expire")).toHaveLength(0);
    expect(await toolMessage(sessionId, "marker_sleep")).toMatchObject({ status: "denied", isError: true });
    expectValidHistory(await client.messages(sessionId));
  });

  it("X3: calls of one batch are approved one by one and their results return in model order", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "marker_sleep", args: { marker: "x3-one" } },
          { tool: "marker_sleep", args: { marker: "x3-two" } },
        ],
        [{ text: "both decided" }],
      ]),
    );
    const approvals = await pendingApprovals(client, run.body.id, 2);
    const byMarker = (marker: string) => approvals.find((a) => JSON.parse(a.call.arguments).marker === marker);
    // The second is approved first; it still runs after the first, which the model put first.
    expect((await client.post(`/v1/approvals/${byMarker("x3-two").id}`, { decision: "approve" })).status).toBe(200);
    await waitForStatus(run.body.id, "awaiting_approval");
    expect(await readMarkers(workspace, "x3-two")).toHaveLength(0);
    expect((await client.post(`/v1/approvals/${byMarker("x3-one").id}`, { decision: "deny", reason: "no" })).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "x3-one")).toHaveLength(0);
    expect(await readMarkers(workspace, "x3-two")).toHaveLength(1);
    const tools = (await client.messages(sessionId)).filter((m) => m.role === "tool").map((m) => m.content.status);
    expect(tools).toEqual(["denied", "succeeded"]);
    expectValidHistory(await client.messages(sessionId));
  });

  it("D6: a decision that arrives while the batch still runs other calls is taken up by that same job, without parking", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "probe", args: { marker: "d6-slow-read", sleepMs: 1500 } },
          { tool: "marker_sleep", args: { marker: "d6-approved-early" } },
        ],
        [{ text: "done" }],
      ]),
    );
    const [approval] = await pendingApprovals(client, run.body.id);
    expect((await client.get(`/v1/runs/${run.body.id}`)).body.status).toBe("running");
    expect((await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" })).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "d6-approved-early")).toHaveLength(1);
    const statuses = (await client.events(sessionId)).filter((e) => e.type === "run_status").map((e) => e.data.status);
    expect(statuses).not.toContain("awaiting_approval");
    const tools = (await client.messages(sessionId)).filter((m) => m.role === "tool").map((m) => m.content.name);
    expect(tools).toEqual(["probe", "marker_sleep"]);
  });

  it("X3, D11: six racing decisions, identical or not, leave exactly one winner; the others answer 409 with the decision that stands", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "marker_sleep", args: { marker: "race-a" } },
          { tool: "marker_sleep", args: { marker: "race-b" } },
        ],
        [{ text: "done" }],
      ]),
    );
    const [first, second] = await pendingApprovals(client, run.body.id, 2);
    const same = await Promise.all(Array.from({ length: 6 }, () => client.post(`/v1/approvals/${first.id}`, { decision: "approve" })));
    expect(same.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    const winner = same.find((r) => r.status === 200)!;
    for (const loser of same.filter((r) => r.status === 409))
      expect(loser.body.error.current).toMatchObject({ status: "approved", decidedAt: winner.body.decidedAt });
    const mixed = await Promise.all(
      Array.from({ length: 6 }, (_, i) => client.post(`/v1/approvals/${second.id}`, { decision: i % 2 ? "deny" : "approve" })),
    );
    expect(mixed.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    const stands = mixed.find((r) => r.status === 200)!.body.status;
    for (const loser of mixed.filter((r) => r.status === 409)) expect(loser.body.error.current.status).toBe(stands);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const resolved = (await client.events(sessionId)).filter((e) => e.type === "approval_resolved");
    expect(resolved).toHaveLength(2);
    expectValidHistory(await client.messages(sessionId));
  });

  it("S1: a visible tool can still be denied by a rule, and a denial is final", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "full_access" });
    const policy = await client.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { deny: ["marker_*"] } });
    expect(policy.status).toBe(200);
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "s1-denied" } }], [{ text: "ok" }]]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const [step] = await env.query<{ tools: string[] }>("select tools from steps where run_id = $1 and index = 0", [run.body.id]);
    expect(step?.tools).toContain("marker_sleep");
    expect(await readMarkers(workspace, "s1-denied")).toHaveLength(0);
    const message = await toolMessage(sessionId, "marker_sleep");
    expect(message).toMatchObject({ status: "denied", isError: true });
    expect(message.content[0].text).toMatch(/policy/);
    expect((await client.get(`/v1/approvals?runId=${run.body.id}`)).body.approvals).toEqual([]);
  });

  it("S1: a policy set while the model streams applies from the next step at the latest: the first group keeps the verdict its step's commit gave", async () => {
    const { projectId, sessionId } = await client.newSession({ approvalMode: "full_access" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [{ text: "working" }, { delayMs: 1500 }, { tool: "marker_sleep", args: { marker: "s1-streaming" } }],
        [{ tool: "marker_sleep", args: { marker: "s1-next" } }],
        [{ text: "ok" }],
      ]),
    );
    // The step's claim has read the policies once its first text is out.
    await waitFor(
      async () => (await client.events(sessionId)).some((e) => e.type === "text_delta" && e.runId === run.body.id),
      10_000,
      "the model to stream",
    );
    expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { deny: ["marker_*"] } })).status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const calls = await env.query<{ step_index: number; status: string; pre_grant: unknown }>(
      "select step_index, status, pre_grant from tool_calls where run_id = $1 order by step_index",
      [run.body.id],
    );
    expect(calls).toEqual([
      { step_index: 0, status: "succeeded", pre_grant: { network: true } },
      { step_index: 1, status: "denied", pre_grant: null },
    ]);
    expect(await readMarkers(workspace, "s1-streaming")).toHaveLength(1);
    expect(await readMarkers(workspace, "s1-next")).toHaveLength(0);
  });

  it("S5: a tool from another tool source goes through the same gateway (network asks in Auto)", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "net_probe", args: { marker: "s5-net", url: "https://example.com/" } }], [{ text: "ok" }]]),
    );
    const [approval] = await pendingApprovals(client, run.body.id);
    expect(approval.call.tool).toBe("net_probe");
    expect(await readMarkers(workspace, "s5-net")).toHaveLength(0);
    await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" });
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "s5-net")).toHaveLength(1);
  });

  it("X3: a pending approval lists a display diff for write, and cancelling the run cancels the approval", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const run = await client.startRun(sessionId, script([[{ tool: "write", args: { path: "notes.txt", content: "hello\n" } }]]));
    const [approval] = await pendingApprovals(client, run.body.id);
    expect(approval.displayDiff).toContain("+hello");
    expect((await client.post(`/v1/runs/${run.body.id}/cancel`)).status).toBe(200);
    expect((await client.get(`/v1/approvals/${approval.id}`)).body.status).toBe("cancelled");
    expect((await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" })).status).toBe(409);
    expect(await toolMessage(sessionId, "write")).toMatchObject({ status: "cancelled" });
    expectValidHistory(await client.messages(sessionId));
  });

  it("D8: another tenant's approval answers 404 and cannot be decided", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "d8" } }]]));
    const [approval] = await pendingApprovals(client, run.body.id);
    const other = await env.newTenant("other");
    expect((await other.get(`/v1/approvals/${approval.id}`)).status).toBe(404);
    expect((await other.post(`/v1/approvals/${approval.id}`, { decision: "approve" })).status).toBe(404);
    expect((await other.get("/v1/approvals?status=pending")).body.approvals).toEqual([]);
    expect((await client.get(`/v1/approvals/${approval.id}`)).body.status).toBe("pending");
    await client.post(`/v1/runs/${run.body.id}/cancel`);
  });

  it("S2: an invalid policy rule is refused with 400", async () => {
    const { projectId } = await client.newSession();
    const bad = await client.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["bash(npm test"] } });
    expect(bad.status).toBe(400);
    const good = await client.request("PUT", "/v1/policy", { rules: { ask: ["web_fetch"] }, approvalTtlSeconds: 3600 });
    expect(good.status).toBe(200);
    expect((await client.get("/v1/policy")).body).toEqual({ rules: { ask: ["web_fetch"] }, approvalTtlSeconds: 3600 });
    await client.request("PUT", "/v1/policy", {});
  });
});
