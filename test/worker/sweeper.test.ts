import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunId, SessionId } from "../../src/ids.js";
import { jobIdFor } from "../../src/queue/job-types.js";
import { sweepOnce } from "../../src/worker/sweeper.js";
import { script, type ApiClient } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
let client: ApiClient;

// No worker runs in this file: the test drives the sweeper by hand, on real Postgres and Redis.
beforeAll(async () => {
  env = await createTestEnv({ FOYA_SWEEP_GRACE_MS: "0" });
  client = await env.newTenant();
});
afterAll(async () => env?.close());

async function acceptedRun(input: string): Promise<{ sessionId: SessionId; runId: RunId }> {
  const { sessionId } = await client.newSession();
  const run = await client.startRun(sessionId, input);
  return { sessionId, runId: run.body.id };
}

describe("sweeper", () => {
  it("X4: leaves a run alone while its job waits in the queue", async () => {
    const { runId } = await acceptedRun("waiting");
    await sweepOnce(env.services);
    const [row] = await env.query<{ redispatches: number }>("select redispatches from runs where id = $1", [runId]);
    expect(row!.redispatches).toBe(0);
  });

  it("X4: re-dispatches a run whose job was lost, under a new job id", async () => {
    const { runId } = await acceptedRun("lost");
    const original = jobIdFor(runId, { kind: "step", stepIndex: 0 }, 0);
    await (await env.services.dispatcher.stepQueueFor(runId).getJob(original))!.remove();
    expect(await sweepOnce(env.services)).toBeGreaterThanOrEqual(1);
    const [row] = await env.query<{ redispatches: number }>("select redispatches from runs where id = $1", [runId]);
    expect(row!.redispatches).toBe(1);
    const again = await env.services.dispatcher.stepQueueFor(runId).getJob(jobIdFor(runId, { kind: "step", stepIndex: 0 }, 1));
    expect(again?.data).toEqual({ runId, stepIndex: 0 });
    // Swept again while that job waits: nothing more happens.
    await sweepOnce(env.services);
    const [after] = await env.query<{ redispatches: number }>("select redispatches from runs where id = $1", [runId]);
    expect(after!.redispatches).toBe(1);
  });

  it("X4: fails a run visibly, with every call answered, once its work was lost too often", async () => {
    const { sessionId, runId } = await acceptedRun(script([[{ tool: "noop", args: {} }]]));
    // Simulate a run stuck at its batch: the step committed two calls, then the batch job kept vanishing.
    await env.query("update runs set status = 'running', next_job = $2, redispatches = 5 where id = $1", [
      runId,
      JSON.stringify({ kind: "batch", stepIndex: 0 }),
    ]);
    await env.query(
      "insert into steps (id, tenant_id, run_id, index, status, tools) select 'stp_sw', tenant_id, id, 0, 'completed', '[]' from runs where id = $1",
      [runId],
    );
    for (const index of [0, 1]) {
      await env.query(
        `insert into tool_calls (id, tenant_id, session_id, run_id, step_id, step_index, call_index, call_id, name, arguments_raw, status)
         select $2, tenant_id, session_id, id, 'stp_sw', 0, $3, $2, 'noop', '{}', 'queued' from runs where id = $1`,
        [runId, `call_sw_${index}`, index],
      );
    }
    await env.query(
      `insert into messages (id, tenant_id, session_id, run_id, run_ordinal, step_index, part, call_index, role, content)
       select 'msg_sw', tenant_id, session_id, id, 1, 0, 1, 0, 'assistant', $2 from runs where id = $1`,
      [
        runId,
        JSON.stringify({
          role: "assistant",
          text: "",
          toolCalls: [0, 1].map((i) => ({ callId: `call_sw_${i}`, name: "noop", argumentsRaw: "{}" })),
        }),
      ],
    );
    await sweepOnce(env.services);
    const run = (await client.get(`/v1/runs/${runId}`)).body;
    expect(run.status).toBe("failed");
    expect(run.error.code).toBe("dispatch_exhausted");
    const calls = await env.query<{ status: string }>("select status from tool_calls where run_id = $1 order by call_index", [runId]);
    expect(calls.map((c) => c.status)).toEqual(["cancelled", "cancelled"]);
    expectValidHistory(await client.messages(sessionId));
    expect((await client.events(sessionId)).at(-1).data).toMatchObject({ type: "run_end", status: "failed" });
  });
});
