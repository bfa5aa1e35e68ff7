import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;
const processes: FoyaProcess[] = [];

beforeAll(async () => {
  env = await createTestEnv({ FOYA_SHUTDOWN_GRACE_MS: "10000" });
  client = await env.newTenant();
});
afterAll(async () => {
  for (const child of processes) child.kill("SIGKILL");
  await Promise.all(processes.map((child) => child.exited));
  await env?.close();
});

describe("worker shutdown", () => {
  it("D7: SIGTERM drains a worker: the running call finishes and commits, no new job is taken, and another worker carries the run on", async () => {
    const draining = await startFoyaProcess("worker", env.env);
    processes.push(draining);
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [{ tool: "marker_sleep", args: { marker: "drain", sleepMs: 1000 } }],
        [{ tool: "noop", args: { marker: "after" } }],
        [{ text: "ok" }],
      ]),
    );
    await waitFor(async () => (await readMarkers(workspace, "drain")).length === 1, 20_000, "the tool to start");
    draining.kill("SIGTERM");
    const exit = await draining.exited;
    expect(exit.code).toBe(0);
    const [call] = await env.query<{ status: string; executed_by: string }>(
      "select status, executed_by from tool_calls where run_id = $1 and step_index = 0",
      [run.body.id],
    );
    expect(call!.status).toBe("succeeded");
    // The drained worker took no further job: the run waits for the next worker.
    expect((await readMarkers(workspace, "after")).length).toBe(0);
    expect((await client.get(`/v1/runs/${run.body.id}`)).body.status).toBe("running");

    const next = await startFoyaProcess("worker", env.env);
    processes.push(next);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const lines = await readMarkers(workspace, "after");
    expect(lines).toHaveLength(1);
    expect(lines[0]!.split(" ")[0]).toBe(String(next.pid));
  });
});
