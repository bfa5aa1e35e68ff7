import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { ApiClient, script, waitFor } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { processGroup } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * The whole service restarted (SPEC C2): the API and the worker processes SIGKILLed together while
 * a batch has one call confirmed and another running, then started again. Postgres and Redis stay.
 */
let env: TestEnv;
const processes = processGroup();

beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await processes.killAll();
  await env?.close();
});

describe("a restart of the whole service", () => {
  it("C2: after the API and worker are killed and started again, the unfinished call is never run again, the confirmed result stays in history as it was, and the run shows its true state", async () => {
    const [api] = await Promise.all([processes.start("api", env.env), processes.start("worker", env.env)]);
    const created = await env.admin.post<{ apiKey: string }>("/v1/tenants", { name: "c2" });
    const client = ApiClient.forUrl(api.url as string, created.body.apiKey);
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "probe", id: "call_done", args: { marker: "c2-done", sleepMs: 0 } },
          { tool: "probe", id: "call_long", args: { marker: "c2-long", sleepMs: 60_000 } },
        ],
        [{ text: "never" }],
      ]),
    );
    expect(run.status).toBe(202);
    await waitFor(
      async () => {
        const calls = await env.query<{ call_id: string; status: string }>("select call_id, status from tool_calls where run_id = $1", [
          run.body.id,
        ]);
        const status = Object.fromEntries(calls.map((call) => [call.call_id, call.status]));
        return status.call_done === "succeeded" && status.call_long === "running" && (await readMarkers(workspace, "c2-long")).length === 1;
      },
      20_000,
      "one call confirmed while the other runs",
    );
    const before = (await client.messages(sessionId)).filter((message) => message.role === "tool");
    expect(before.map((message) => message.content.callId)).toEqual(["call_done"]);

    // The whole service goes at once: nothing of it is left to finish or report the running call.
    await processes.killAll();
    const [restarted] = await Promise.all([processes.start("api", env.env), processes.start("worker", env.env)]);
    const again = ApiClient.forUrl(restarted.url as string, created.body.apiKey);

    const ended = await again.waitForRun(run.body.id, 30_000);
    expect(ended.status).toBe("interrupted");
    await env.settled();
    const calls = await env.query<{ call_id: string; status: string }>(
      "select call_id, status from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(calls).toEqual([
      { call_id: "call_done", status: "succeeded" },
      { call_id: "call_long", status: "interrupted" },
    ]);
    // Never replayed: each probe started once, and the model was not asked again.
    expect((await readMarkers(workspace, "c2-long")).filter((line) => line.startsWith("start"))).toHaveLength(1);
    expect((await readMarkers(workspace, "c2-done")).filter((line) => line.startsWith("start"))).toHaveLength(1);
    const messages = await again.messages(sessionId);
    expectValidHistory(messages);
    const tool = messages.filter((message) => message.role === "tool");
    // The confirmed result is kept as it was; the interrupted call is answered as such.
    expect(tool.find((message) => message.content.callId === "call_done")).toEqual(before[0]);
    expect(tool.find((message) => message.content.callId === "call_long")?.content.status).toBe("interrupted");
    expect(messages.filter((message) => message.role === "assistant")).toHaveLength(1);
    // Its state, as the API and the event stream tell it.
    const shown = await again.get<{ status: string }>(`/v1/runs/${run.body.id}`);
    expect(shown.body.status).toBe("interrupted");
    const events = await env.query<{ status: string }>(
      "select data->>'status' as status from events where run_id = $1 and type = 'run_end'",
      [run.body.id],
    );
    expect(events).toEqual([{ status: "interrupted" }]);
  });
});
