import { describe, expect, it } from "vitest";
import { runTransitions, type RunStatus } from "../../src/core/run-status.js";
import { useTestEnv } from "../helpers/test-env.js";
import { readMarkers } from "../fixtures/test-tools.js";
import { script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";

const { env, client } = useTestEnv({ worker: true });

describe("a turn through step and batch jobs", () => {
  it("D1, D2: a turn runs to completion through step and batch jobs; statuses move only along the state machine", async () => {
    const { sessionId } = await client.newSession();
    const started = await client.startRun(sessionId, "hello from the test");
    expect(started.status).toBe(202);
    expect(started.body.status).toBe("queued");
    const runId: string = started.body.id;

    // Watch every status the run shows while it runs.
    const seen: RunStatus[] = [started.body.status];
    for (;;) {
      const run = await client.get(`/v1/runs/${runId}`);
      if (seen.at(-1) !== run.body.status) seen.push(run.body.status);
      if (["completed", "failed", "cancelled", "interrupted"].includes(run.body.status)) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(seen.at(-1)).toBe("completed");
    for (let i = 1; i < seen.length; i++) {
      expect(runTransitions[seen[i - 1] as RunStatus]).toContain(seen[i]);
    }

    // Three model steps (write, read, answer) and two tool batches, each a job of its own.
    const steps = await env.query<{ index: number; status: string; attempt: number }>(
      "select index, status, attempt from steps where run_id = $1 order by index",
      [runId],
    );
    expect(steps).toEqual([
      { index: 0, status: "completed", attempt: 1 },
      { index: 1, status: "completed", attempt: 1 },
      { index: 2, status: "completed", attempt: 1 },
    ]);
    const calls = await env.query<{ name: string; status: string }>(
      "select name, status from tool_calls where run_id = $1 order by step_index, call_index",
      [runId],
    );
    expect(calls).toEqual([
      { name: "write", status: "succeeded" },
      { name: "read", status: "succeeded" },
    ]);

    const messages = await client.messages(sessionId);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
    expect(messages[4].content.content[0].text).toContain("hello from the test");
    expect(messages[5].content.text).toMatch(/^Done: I wrote notes\/hello\.md/);

    const events = await client.events(sessionId);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("run_start");
    expect(types.at(-1)).toBe("run_end");
    expect(events.at(-1).data.status).toBe("completed");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(types.filter((t) => t === "step_start")).toHaveLength(3);
    expect(types.filter((t) => t === "tool_end")).toHaveLength(2);
  });

  it("D2: Postgres refuses a status change the state machine does not allow", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "hi" }]]));
    await client.waitForRun(run.body.id);
    await expect(env.query("update runs set status = 'running' where id = $1", [run.body.id])).rejects.toThrow(
      /cannot move from completed to running/,
    );
    await expect(env.query("update runs set status = 'paused' where id = $1", [run.body.id])).rejects.toThrow(
      /runs_status_check|cannot move/,
    );
  });

  it("P6: a result with the end-batch signal skips the calls after it, each with a skipped result", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "noop", args: { marker: "p6-before" } },
          { tool: "end_batch", args: {} },
          { tool: "noop", args: { marker: "p6-after" } },
          { tool: "noop", args: {} },
        ],
        [{ text: "ok" }],
      ]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const calls = await env.query<{ name: string; status: string }>(
      "select name, status from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(calls.map((c) => c.status)).toEqual(["succeeded", "succeeded", "skipped", "skipped"]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const skipped = messages.filter((m) => m.role === "tool" && m.content.status === "skipped");
    expect(skipped.map((m) => m.content.isError)).toEqual([true, true]);
    const workspace = await env.workspaceOf(sessionId);
    expect(await readMarkers(workspace, "p6-before")).toHaveLength(1);
    expect(await readMarkers(workspace, "p6-after")).toHaveLength(0);
  });

  it("T4, T5: unparseable arguments and unknown tools become is_error results the model sees; the run goes on", async () => {
    const { projectId, sessionId } = await client.newSession();
    // Reading outside the workspace would ask; a rule lets it through, so the tool's own refusal is what is tested (S1).
    await client.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["read"] } });
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "read", argsRaw: '{"path": "x.txt"' },
          { tool: "no_such_tool", args: {} },
          { tool: "read", args: { path: 42 } },
          { tool: "read", args: { path: "../../etc/passwd" } },
        ],
        [{ text: "recovered" }],
      ]),
    );
    const done = await client.waitForRun(run.body.id);
    expect(done.status).toBe("completed");
    const tools = (await client.messages(sessionId)).filter((m) => m.role === "tool").map((m) => m.content);
    expect(tools.map((t) => [t.status, t.isError])).toEqual([
      ["failed", true],
      ["failed", true],
      ["failed", true],
      ["failed", true],
    ]);
    const codes = await env.query<{ error_code: string }>("select error_code from tool_calls where run_id = $1 order by call_index", [
      run.body.id,
    ]);
    expect(codes.map((c) => c.error_code)).toEqual(["invalid_arguments", "unknown_tool", "invalid_arguments", "path_outside_workspace"]);
  });
});
