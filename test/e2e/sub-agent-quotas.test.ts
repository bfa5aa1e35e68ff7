import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, type ApiClient } from "../helpers/api-client.js";
import {
  finishChunk,
  sseScript,
  startOpenAIWireServer,
  textChunk,
  toolArgsChunk,
  toolCallStartChunk,
  usageChunk,
  type OpenAIWireServer,
} from "../helpers/openai-wire-server.js";
import { createTestEnv, writeProvidersFile, type TestEnv } from "../helpers/test-env.js";

/**
 * Sub-agents under the tenant's quotas (SPEC X5, A1): a child run is admitted like any run, into
 * the slot its waiting parent lends it, and the tenant's token and storage quotas are checked at
 * every step's claim and every child's start. Before, children bypassed every quota: with
 * `activeRuns: 1`, one run had 21 running at once.
 */
let env: TestEnv;
let wire: OpenAIWireServer;
const childCount = 4;

beforeAll(async () => {
  // A model that spawns children when told "spawn", answers children with text, and reports 500 tokens per step.
  wire = await startOpenAIWireServer((request) => {
    const messages = request.body.messages as Array<{ role: string; content: unknown }>;
    const lastUser = messages.filter((message) => message.role === "user").at(-1);
    const spawning = lastUser?.content === "spawn" && messages.at(-1)?.role === "user";
    // A child answers slowly, so every child of a batch has started before the first one has spent its tokens.
    if (!spawning)
      return { ...sseScript([textChunk("child "), textChunk("answer"), finishChunk("stop"), usageChunk(400, 100)]), delayMs: 300 };
    const calls = Array.from({ length: childCount }, (_, i) => [
      toolCallStartChunk(i, `call_${i}`, "agent"),
      toolArgsChunk(i, JSON.stringify({ task: `child task ${i}` })),
    ]).flat();
    return sseScript([...calls, finishChunk("tool_calls"), usageChunk(400, 100)]);
  });
  const providersFile = await writeProvidersFile([
    { name: "wire", kind: "openai-chat", baseUrl: wire.baseUrl, model: "wire-model", apiKeyEnv: "WIRE_KEY" },
  ]);
  env = await createTestEnv({ FOYA_PROVIDERS_FILE: providersFile, WIRE_KEY: "sk-wire" });
  await env.startWorker();
});
afterAll(async () => {
  await env?.close();
  await wire?.close();
});

async function tenantWithQuotas(name: string, quotas: Record<string, number>): Promise<ApiClient> {
  const tenant = await env.newTenant(name);
  const patched = await env.admin.request("PATCH", `/v1/tenants/${tenant.tenantId}`, { quotas });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  return tenant;
}

/**
 * The most of a tenant's runs that were working at once, from its events: a run works from its
 * `run_start` (admission) to its `run_end`, except while any of its `agent` calls waits on a
 * child (`subagent_start` to that call's `tool_end`), when its children work in its place.
 * Events of one transaction share its time, so an end and the start it admits touch without
 * overlapping.
 */
async function mostWorkingAtOnce(tenantId: string): Promise<number> {
  const rows = await env.query<{ run_id: string; type: string; data: { callId?: string }; at: string }>(
    `select run_id, type, data, (extract(epoch from created_at) * 1000000)::bigint::text as at from events
     where tenant_id = $1 and type in ('run_start', 'run_end', 'subagent_start', 'tool_end') order by created_at, session_id, seq`,
    [tenantId],
  );
  const byRun = new Map<string, typeof rows>();
  for (const row of rows) byRun.set(row.run_id, [...(byRun.get(row.run_id) ?? []), row]);
  // Each run's working segments: started, not ended, and no agent call of its pending.
  const changes: Array<{ at: bigint; delta: number }> = [];
  for (const events of byRun.values()) {
    const spawned = new Set(events.filter((event) => event.type === "subagent_start").map((event) => event.data.callId));
    let started = false;
    let pending = 0;
    let working = false;
    for (const event of [...events].sort((a, b) => (BigInt(a.at) < BigInt(b.at) ? -1 : BigInt(a.at) > BigInt(b.at) ? 1 : 0))) {
      if (event.type === "run_start") started = true;
      else if (event.type === "run_end") started = false;
      else if (event.type === "subagent_start") pending++;
      else if (event.type === "tool_end" && spawned.has(event.data.callId)) pending--;
      const now = started && pending === 0;
      if (now !== working) changes.push({ at: BigInt(event.at), delta: now ? 1 : -1 });
      working = now;
    }
    if (working) throw new Error(`run ${events[0]?.run_id} never ended`);
  }
  // Ends before starts at the same instant.
  changes.sort((a, b) => (a.at === b.at ? a.delta - b.delta : a.at < b.at ? -1 : 1));
  let working = 0;
  let most = 0;
  for (const change of changes) {
    working += change.delta;
    most = Math.max(most, working);
  }
  return most;
}

async function runsOf(
  tenantId: string,
): Promise<Array<{ id: string; status: string; error: { code: string } | null; parent: string | null }>> {
  return env.query(
    "select r.id, r.status, r.error, s.parent_run_id as parent from runs r join sessions s on s.id = r.session_id where r.tenant_id = $1",
    [tenantId],
  );
}

/** A child's script: a few slow chunks, so children that ran at once would overlap. */
const slowChild = (text: string) => script([[{ text, chunks: 4 }]], { chunkDelayMs: 40 });

describe("sub-agents under the tenant's quotas", () => {
  it("X5, A1: with activeRuns 1, runs spawning eight children, or children with grandchildren, never have more than one run working at once, never deadlock, and every run completes", async () => {
    const tenant = await tenantWithQuotas("one at a time", { activeRuns: 1 });
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const flat = Array.from({ length: 8 }, (_, i) => ({ tool: "agent", args: { task: slowChild(`child ${i}`) } }));
    const first = await tenant.startRun(sessionId, script([flat, [{ text: "parent done" }]]));
    expect((await tenant.waitForRun(first.body.id, 90_000)).status).toBe("completed");

    // Two levels: each child waits on grandchildren of its own, in the slot its parent lent it.
    const grandchildren = Array.from({ length: 2 }, (_, i) => ({ tool: "agent", args: { task: slowChild(`grandchild ${i}`) } }));
    const nestedChild = script([grandchildren, [{ text: "child done" }]]);
    const nested = Array.from({ length: 3 }, () => ({ tool: "agent", args: { task: nestedChild } }));
    const second = await tenant.startRun(sessionId, script([nested, [{ text: "parent done" }]]));
    expect((await tenant.waitForRun(second.body.id, 90_000)).status).toBe("completed");

    const runs = await runsOf(tenant.tenantId as string);
    expect(runs).toHaveLength(2 + 8 + 3 + 6);
    expect(runs.filter((run) => run.status !== "completed")).toEqual([]);
    expect(await mostWorkingAtOnce(tenant.tenantId as string)).toBe(1);
    // Every agent call got its child's answer.
    const results = (await tenant.toolMessages(sessionId)).filter((message) => message.name === "agent");
    expect(results).toHaveLength(11);
    expect(results.every((message) => message.status === "succeeded")).toBe(true);
  }, 180_000);

  it("X5, A1: tokens used up by a child stop the other children's steps and the parent's with quota_exceeded, and the next turn is refused", async () => {
    // Each model step reports 500 tokens: the parent's first step and one child's reach the quota.
    const tenant = await tenantWithQuotas("token budget", { activeRuns: 1, tokensPerDay: 1000 });
    const { sessionId } = await tenant.newSession({ providerProfile: "wire", approvalMode: "auto" });
    const requestsBefore = wire.requests.length;
    const started = await tenant.startRun(sessionId, "spawn");
    const parent = await tenant.waitForRun(started.body.id, 60_000);
    expect(parent.status).toBe("failed");
    expect(parent.error).toMatchObject({ code: "quota_exceeded", message: expect.stringMatching(/tokensPerDay quota is 1000/) });
    const children = (await runsOf(tenant.tenantId as string)).filter((run) => run.parent === started.body.id);
    expect(children).toHaveLength(childCount);
    expect(children.filter((run) => run.status === "completed")).toHaveLength(1);
    expect(children.filter((run) => run.status === "failed").map((run) => run.error?.code)).toEqual(
      Array.from({ length: childCount - 1 }, () => "quota_exceeded"),
    );
    // Two model requests in all: the parent's first step and one child's; nothing ran past the quota.
    expect(wire.requests.length - requestsBefore).toBe(2);
    expect((await tenant.get("/v1/usage")).body.usage.tokensToday).toBe(1000);
    const agentResults = (await tenant.toolMessages(sessionId)).filter((message) => message.name === "agent");
    expect(agentResults.filter((message) => message.isError)).toHaveLength(childCount - 1);

    // Over the quota from the start: the parent's next turn is refused (429), and a child is not even started.
    const refused = await tenant.startRun(sessionId, "spawn");
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("quota_exceeded");
  }, 120_000);

  it("X5, A1: a sub-agent asked for once the tenant is over its token quota is refused with an is_error quota_exceeded result", async () => {
    // The parent's own first step uses the whole quota; its agent calls then start nothing.
    const tenant = await tenantWithQuotas("spent at once", { tokensPerDay: 500 });
    const { sessionId } = await tenant.newSession({ providerProfile: "wire", approvalMode: "auto" });
    const started = await tenant.startRun(sessionId, "spawn");
    const parent = await tenant.waitForRun(started.body.id, 60_000);
    expect(parent).toMatchObject({ status: "failed", error: { code: "quota_exceeded" } });
    expect((await runsOf(tenant.tenantId as string)).filter((run) => run.parent !== null)).toEqual([]);
    const agentCalls = await env.query<{ status: string; error_code: string | null }>(
      "select status, error_code from tool_calls where run_id = $1 and name = 'agent'",
      [started.body.id],
    );
    expect(agentCalls).toEqual(Array.from({ length: childCount }, () => ({ status: "failed", error_code: "quota_exceeded" })));
    const agentResults = (await tenant.toolMessages(sessionId)).filter((message) => message.name === "agent");
    expect(agentResults.map((message) => message.isError)).toEqual(Array.from({ length: childCount }, () => true));
  }, 120_000);

  it("X5, A1: storage filled by a child stops the later steps and children with quota_exceeded; only one child's file is written", async () => {
    const tenant = await tenantWithQuotas("storage budget", { activeRuns: 1, storageBytes: 100 });
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const writer = (i: number) =>
      script([[{ tool: "write", args: { path: `child-${i}.txt`, content: `${i}`.repeat(300) } }], [{ text: "written" }]]);
    const calls = Array.from({ length: 3 }, (_, i) => ({ tool: "agent", args: { task: writer(i) } }));
    const started = await tenant.startRun(sessionId, script([calls, [{ text: "parent done" }]]));
    const parent = await tenant.waitForRun(started.body.id, 60_000);
    expect(parent).toMatchObject({ status: "failed", error: { code: "quota_exceeded" } });
    expect(parent.error.message).toMatch(/storageBytes quota is 100/);
    const children = (await runsOf(tenant.tenantId as string)).filter((run) => run.parent === started.body.id);
    expect(children.map((run) => [run.status, run.error?.code]).sort()).toEqual([
      ["failed", "quota_exceeded"],
      ["failed", "quota_exceeded"],
      ["failed", "quota_exceeded"],
    ]);
    // The children start side by side (agent calls are parallel): whichever got the slot first wrote its file, alone.
    const workspace = await env.workspaceOf(sessionId);
    const written: string[] = [];
    for (const i of [0, 1, 2]) {
      const content = await readFile(path.join(workspace, `child-${i}.txt`), "utf8").catch(() => null);
      if (content !== null) written.push(content);
    }
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/^(0{300}|1{300}|2{300})$/);
  }, 120_000);
});
