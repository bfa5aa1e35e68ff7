import { mkdtemp, readFile, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { treeMatchesDigest } from "../../src/checkpoints/tree-digest.js";
import type { ProjectId, RunId, SessionId } from "../../src/ids.js";
import { captureTree } from "../../src/workspace/checkpoint/tree-capture.js";
import { readMarkers } from "../fixtures/test-tools.js";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * Workers on many hosts without a shared volume (SPEC W3): each worker process here is a host of
 * its own (FOYA_HOST_ID) with a workspace root no other process shares; the API, in this test's
 * process, has a workspace root of its own that nothing ever writes to.
 */

let env: TestEnv;
let client: ApiClient;
const started: FoyaProcess[] = [];

interface Host {
  id: string;
  root: string;
  process: FoyaProcess;
}

async function startHosts(ids: readonly string[], extra: Record<string, string> = {}): Promise<Map<string, Host>> {
  const hosts = new Map<string, Host>();
  for (const id of ids) {
    const root = await mkdtemp(path.join(tmpdir(), `foya-host-${id}-`));
    const child = await startFoyaProcess("worker", { ...env.env, FOYA_HOST_ID: id, FOYA_WORKSPACES_DIR: root, ...extra });
    started.push(child);
    hosts.set(id, { id, root, process: child });
  }
  return hosts;
}

async function stopHosts(): Promise<void> {
  for (const child of started.splice(0)) {
    child.kill("SIGKILL");
    await child.exited;
  }
}

type Call = { tool: string; args: Record<string, unknown> };
const write = (file: string, content: string): Call => ({ tool: "write", args: { path: file, content } });
const sleepCall = (marker: string, sleepMs: number): Call => ({ tool: "marker_sleep", args: { marker, sleepMs } });

async function startTurn(sessionId: SessionId, calls: Call[], extra: Record<string, unknown> = {}): Promise<RunId> {
  const response = await client.post<{ id: RunId }>(`/v1/sessions/${sessionId}/runs`, {
    input: script([calls, [{ text: "done" }]]),
    ...extra,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return response.body.id;
}

async function placementOf(projectId: ProjectId): Promise<{ host_id: string | null; epoch: number }> {
  const [row] = await env.query<{ host_id: string | null; epoch: number }>(
    "select host_id, epoch::int as epoch from project_placements where project_id = $1",
    [projectId],
  );
  if (!row) throw new Error(`project ${projectId} was never placed`);
  return row;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

const folderOf = (host: Host, tenantId: string, projectId: ProjectId) => path.join(host.root, tenantId, projectId);

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant();
});
afterEach(stopHosts);
afterAll(async () => {
  await stopHosts();
  await env?.close();
});

describe("many hosts", () => {
  it("W3: three worker processes as three hosts (disjoint workspace roots, asserted), 12 sessions across them: every batch of a project runs on its placed host; a second turn of each session lands on the same host", async () => {
    const hosts = await startHosts(["host-a", "host-b", "host-c"]);
    const roots = await Promise.all([...hosts.values()].map((host) => realpath(host.root)));
    roots.push(await realpath(env.config.workspaces.dir).catch(() => env.config.workspaces.dir));
    for (const [i, a] of roots.entries())
      for (const [j, b] of roots.entries()) if (i !== j) expect(a === b || a.startsWith(`${b}/`), `${a} within ${b}`).toBe(false);
    const tenantId = client.tenantId ?? "";
    const sessions = await Promise.all(Array.from({ length: 12 }, () => client.newSession({ approvalMode: "auto" })));
    for (const turn of [1, 2]) {
      const runs = await Promise.all(
        sessions.map(({ sessionId }) => startTurn(sessionId, [write(`turn-${turn}.txt`, `turn ${turn}\n`), sleepCall(`turn-${turn}`, 10)])),
      );
      const ended = await Promise.all(runs.map((runId) => client.waitForRun(runId, 60_000)));
      expect(ended.map((run) => run.status)).toEqual(Array(12).fill("completed"));
    }
    const perHost = new Map<string, number>();
    for (const { projectId, sessionId } of sessions) {
      const placement = await placementOf(projectId);
      expect(placement.epoch).toBe(1);
      const placed = hosts.get(placement.host_id ?? "");
      if (!placed) throw new Error(`placed on ${placement.host_id}`);
      perHost.set(placed.id, (perHost.get(placed.id) ?? 0) + 1);
      // Both turns' files in the placed host's copy, and in no other root.
      const folder = folderOf(placed, tenantId, projectId);
      expect(await readFile(path.join(folder, "turn-1.txt"), "utf8")).toBe("turn 1\n");
      expect(await readFile(path.join(folder, "turn-2.txt"), "utf8")).toBe("turn 2\n");
      for (const other of [...hosts.values()].filter((host) => host !== placed))
        expect(await exists(folderOf(other, tenantId, projectId))).toBe(false);
      expect(await exists(path.join(env.config.workspaces.dir, tenantId, projectId))).toBe(false);
      // Every call of both turns ran in the placed host's process.
      for (const turn of [1, 2])
        expect((await readMarkers(folder, `turn-${turn}`)).map((line) => line.split(" ")[0])).toEqual([String(placed.process.pid)]);
      const executors = await env.query<{ executed_by: string }>(
        "select distinct split_part(tc.executed_by, '/', 1) as executed_by from tool_calls tc join runs r on r.id = tc.run_id where r.session_id = $1",
        [sessionId],
      );
      expect(executors.map((row) => row.executed_by.startsWith(`${placed.id}-`))).toEqual([true]);
    }
    // New projects go to the least-loaded live host: none is left out.
    expect([...perHost.keys()].sort()).toEqual(["host-a", "host-b", "host-c"]);
  }, 180_000);

  it("W3: one host SIGKILLed mid-run and its workspace root deleted: its projects move to the other hosts, workspaces rebuilt from checkpoints match the last checkpoint by digest, interrupted calls are never re-run, runs with onInterrupted: continue complete", async () => {
    const hosts = await startHosts(["host-d", "host-e", "host-f"]);
    const tenantId = client.tenantId ?? "";
    const sessions = await Promise.all(Array.from({ length: 6 }, () => client.newSession({ approvalMode: "auto" })));
    const first = await Promise.all(
      sessions.map(({ sessionId }, i) => startTurn(sessionId, [write("kept.txt", `kept ${i}\n`), write("deep/er/file.txt", `${i}\n`)])),
    );
    for (const runId of first) expect((await client.waitForRun(runId, 60_000)).status).toBe("completed");
    const before = new Map<ProjectId, string>();
    for (const { projectId } of sessions) before.set(projectId, (await placementOf(projectId)).host_id ?? "");
    const counts = new Map<string, number>();
    for (const host of before.values()) counts.set(host, (counts.get(host) ?? 0) + 1);
    const victimId = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "";
    const victim = hosts.get(victimId);
    if (!victim) throw new Error("no victim");
    const moved = sessions.filter(({ projectId }) => before.get(projectId) === victimId);
    expect(moved.length).toBeGreaterThan(0);

    const second = await Promise.all(
      sessions.map(({ sessionId }) => startTurn(sessionId, [sleepCall("long", 4_000)], { onInterrupted: "continue" })),
    );
    await waitFor(
      async () =>
        (
          await env.query<{ n: number }>("select count(*)::int as n from tool_calls where run_id = any($1) and status = 'running'", [
            second,
          ])
        )[0]?.n === 6,
      30_000,
      "every long call to run",
    );
    victim.process.kill("SIGKILL");
    await victim.process.exited;
    await rm(victim.root, { recursive: true, force: true });

    const ended = await Promise.all(second.map((runId) => client.waitForRun(runId, 60_000)));
    expect(ended.map((run) => run.status)).toEqual(Array(6).fill("completed"));
    for (const { projectId, sessionId } of moved) {
      const placement = await placementOf(projectId);
      expect(placement.host_id).not.toBe(victimId);
      expect(placement.epoch).toBe(2);
      const host = hosts.get(placement.host_id ?? "");
      if (!host) throw new Error(`placed on ${placement.host_id}`);
      const folder = folderOf(host, tenantId, projectId);
      // The interrupted call is never run again: its marker was in the lost copy only.
      const [call] = await env.query<{ status: string; call_id: string }>("select status, call_id from tool_calls where run_id = $1", [
        second[sessions.findIndex((s) => s.sessionId === sessionId)],
      ]);
      expect(call?.status).toBe("interrupted");
      expect(await readMarkers(folder, "long")).toEqual([]);
      expect(await readFile(path.join(folder, "kept.txt"), "utf8")).toMatch(/^kept \d\n$/);
      const [latest] = await env.query<{ tree_digest: string }>(
        "select tree_digest from workspace_checkpoints where project_id = $1 order by seq desc limit 1",
        [projectId],
      );
      const captured = await captureTree(folder);
      expect(treeMatchesDigest(captured.entries, latest?.tree_digest ?? "")).toBe(true);
      const restored = await env.query<{ reason: string }>(
        "select data->>'reason' as reason from events where session_id = $1 and type = 'workspace_restored'",
        [sessionId],
      );
      expect(restored.map((row) => row.reason)).toEqual(["moved"]);
    }
    // The others ran their long call to its end, where they were.
    for (const { projectId } of sessions.filter((s) => !moved.includes(s))) {
      expect((await placementOf(projectId)).epoch).toBe(1);
    }
  }, 180_000);

  it("W3: a host's disk budget evicts idle projects and rebuilds them on their next turn", async () => {
    // A budget smaller than one project's files: every idle copy over it goes.
    const hosts = await startHosts(["host-g"], { FOYA_WORKSPACES_DISK_BUDGET_BYTES: "1000" });
    const host = hosts.get("host-g");
    if (!host) throw new Error("no host");
    const tenantId = client.tenantId ?? "";
    const { projectId, sessionId } = await client.newSession({ approvalMode: "auto" });
    const content = "x".repeat(4000);
    expect((await client.waitForRun(await startTurn(sessionId, [write("big.txt", content)]), 30_000)).status).toBe("completed");
    const folder = folderOf(host, tenantId, projectId);
    await waitFor(async () => !(await exists(folder)), 20_000, "the idle copy to be evicted");
    expect((await placementOf(projectId)).host_id).toBeNull();
    const second = await startTurn(sessionId, [{ tool: "bash", args: { command: "wc -c < big.txt" } }]);
    expect((await client.waitForRun(second, 30_000)).status).toBe("completed");
    // The copy may be evicted again as soon as the turn ends: what the call saw is in its result.
    const [ended] = await env.query<{ preview: string; status: string }>(
      "select data->>'preview' as preview, data->>'status' as status from events where run_id = $1 and type = 'tool_end'",
      [second],
    );
    expect(ended).toMatchObject({ status: "succeeded" });
    expect(ended?.preview).toMatch(/\b4000\b/);
    expect((await placementOf(projectId)).epoch).toBeGreaterThanOrEqual(2);
    const restored = await env.query<{ reason: string; files: number }>(
      "select data->>'reason' as reason, (data->>'files')::int as files from events where session_id = $1 and type = 'workspace_restored'",
      [sessionId],
    );
    expect(restored).toEqual([{ reason: "moved", files: 1 }]);
  }, 120_000);
});
