import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { ApiClient, script, waitFor } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
const processes: FoyaProcess[] = [];

async function start(role: "api" | "worker"): Promise<FoyaProcess> {
  const child = await startFoyaProcess(role, env.env);
  processes.push(child);
  return child;
}

beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  for (const child of processes) child.kill("SIGKILL");
  await Promise.all(processes.map((child) => child.exited));
  await env?.close();
});

describe("waiting for approval across processes", () => {
  it("D6: a run waits with no active job; the decision posted to a second API process completes the batch on a second worker process", async () => {
    const apiA = await start("api");
    const apiB = await start("api");
    const firstWorker = await start("worker");
    const created = await env.admin.post<{ apiKey: string }>("/v1/tenants", { name: "d6" });
    const viaA = ApiClient.forUrl(apiA.url as string, created.body.apiKey);
    const viaB = ApiClient.forUrl(apiB.url as string, created.body.apiKey);

    const { sessionId } = await viaA.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    // A mixed batch: two reads that need no approval, then a call that asks.
    const run = await viaA.startRun(
      sessionId,
      script([
        [
          { tool: "noop", args: { marker: "d6-read-1" } },
          { tool: "noop", args: { marker: "d6-read-2" } },
          { tool: "marker_sleep", args: { marker: "d6-asks" } },
        ],
        [{ text: "all three answered" }],
      ]),
    );
    await waitFor(async () => (await viaA.get(`/v1/runs/${run.body.id}`)).body.status === "awaiting_approval", 20_000, "the run to wait");
    expect(await readMarkers(workspace, "d6-read-1")).toHaveLength(1);
    expect(await readMarkers(workspace, "d6-read-2")).toHaveLength(1);
    expect(await readMarkers(workspace, "d6-asks")).toHaveLength(0);

    // Nothing is held while it waits: no job of either queue is active or waiting, and the run has no lease.
    const { toolQueue } = env.services.dispatcher;
    const stepQueue = env.services.dispatcher.stepQueueFor(run.body.id);
    const live = [
      ...(await stepQueue.getJobs(["active", "waiting", "delayed", "prioritized"])),
      ...(await toolQueue.getJobs(["active", "waiting", "delayed", "prioritized"])),
    ].filter((job) => job?.data.runId === run.body.id);
    expect(live).toEqual([]);
    const [row] = await env.query<{ next_job: unknown; lease_owner: string | null }>(
      "select next_job, lease_owner from runs where id = $1",
      [run.body.id],
    );
    expect(row).toEqual({ next_job: null, lease_owner: null });

    firstWorker.kill("SIGTERM");
    await firstWorker.exited;
    const secondWorker = await start("worker");

    const [approval] = (await viaB.get(`/v1/approvals?status=pending&sessionId=${sessionId}`)).body.approvals;
    expect(approval.call).toMatchObject({ tool: "marker_sleep" });
    const decided = await viaB.post(`/v1/approvals/${approval.id}`, { decision: "approve" });
    expect(decided.status).toBe(200);

    const done = await viaA.waitForRun(run.body.id, 30_000);
    expect(done.status).toBe("completed");
    const ran = await readMarkers(workspace, "d6-asks");
    expect(ran).toHaveLength(1);
    expect(ran[0]?.startsWith(`${secondWorker.pid} `)).toBe(true);
    const messages = await viaA.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.filter((m) => m.role === "tool").map((m) => [m.content.name, m.content.status])).toEqual([
      ["noop", "succeeded"],
      ["noop", "succeeded"],
      ["marker_sleep", "succeeded"],
    ]);
  });
});
