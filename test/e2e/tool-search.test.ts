import path from "node:path";
import { describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { repoRoot, testToolsModule, useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({
  worker: true,
  overrides: { FOYA_TOOL_MODULES: `${testToolsModule},${path.join(repoRoot, "test/fixtures/deferred-tools.ts")}` },
});

async function stepTools(runId: string): Promise<string[][]> {
  const rows = await env.query<{ tools: string[] }>("select tools from steps where run_id = $1 order by index", [runId]);
  return rows.map((row) => row.tools);
}

async function toolResults(runId: string): Promise<Array<{ name: string; status: string; error_code: string | null; text: string }>> {
  return env.query(
    "select name, status, error_code, result->0->>'text' as text from tool_calls where run_id = $1 order by step_index, call_index",
    [runId],
  );
}

describe("exposure and tool_search", () => {
  it("R4, R6: a step sends direct tools and tool_search, never deferred or hidden ones, and records what it sent", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(
      sessionId,
      script([
        [
          { tool: "weather_lookup", args: { city: "Oslo" } },
          { tool: "admin_secret", args: {} },
        ],
        [{ text: "ok" }],
      ]),
    );
    await client.waitForRun(run.body.id);
    const [first] = await stepTools(run.body.id);
    expect(first).toContain("tool_search");
    expect(first).toContain("read");
    for (const name of ["weather_lookup", "calendar_create_event", "sendEmail", "admin_secret"]) expect(first).not.toContain(name);
    const [deferred, hidden] = await toolResults(run.body.id);
    expect(deferred).toMatchObject({ status: "failed", error_code: "tool_not_active" });
    expect(deferred!.text).toContain("tool_search");
    expect(hidden).toMatchObject({ status: "failed", error_code: "tool_hidden" });
    expect((await client.get(`/v1/tools?session=${sessionId}`)).body.tools.map((t: { name: string }) => t.name)).not.toContain(
      "admin_secret",
    );
  });

  it("R5: tool_search activates matches from the next step on, and only for the current turn", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(
      sessionId,
      script([
        // Activation is not visible in the step that searched: the second call is refused.
        [
          { tool: "tool_search", args: { query: "weather forecast for a city" } },
          { tool: "weather_lookup", args: { city: "Oslo" } },
        ],
        [{ tool: "weather_lookup", args: { city: "Oslo" } }],
        [{ text: "It is cold." }],
      ]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const tools = await stepTools(run.body.id);
    expect(tools[0]).not.toContain("weather_lookup");
    expect(tools[1]).toContain("weather_lookup");
    expect(tools[2]).toContain("weather_lookup");
    const results = await toolResults(run.body.id);
    expect(results.map((r) => [r.name, r.status, r.error_code])).toEqual([
      ["tool_search", "succeeded", null],
      ["weather_lookup", "failed", "tool_not_active"],
      ["weather_lookup", "succeeded", null],
    ]);
    expect(results[0]!.text).toMatch(/^Activated for this turn.*\n- weather_lookup: /s);
    expectValidHistory(await client.messages(sessionId));

    // The next turn starts without it.
    const next = await client.startRun(sessionId, script([[{ tool: "weather_lookup", args: { city: "Bergen" } }], [{ text: "ok" }]]));
    await client.waitForRun(next.body.id);
    expect((await stepTools(next.body.id))[0]).not.toContain("weather_lookup");
    expect((await toolResults(next.body.id))[0]).toMatchObject({ status: "failed", error_code: "tool_not_active" });
  });

  it("R3, R5: tool_search finds only what the session's allow-list and run mode permit", async () => {
    const { sessionId } = await client.newSession({ toolAllowList: ["tool_search", "calendar_list_events"] });
    const run = await client.startRun(sessionId, script([[{ tool: "tool_search", args: { query: "calendar" } }], [{ text: "ok" }]]));
    await client.waitForRun(run.body.id);
    const [search] = await toolResults(run.body.id);
    expect(search!.text).toContain("calendar_list_events");
    expect(search!.text).not.toContain("calendar_create_event");
    // An activated tool joins at the end of the run's list, not in name order (PR4: the request's prefix stays the same).
    expect((await stepTools(run.body.id))[1]).toEqual(["tool_search", "calendar_list_events"]);

    const plain = await client.newSession({ toolAllowList: ["read", "write"] });
    const other = await client.startRun(plain.sessionId, script([[{ text: "hi" }]]));
    await client.waitForRun(other.body.id);
    expect((await stepTools(other.body.id))[0]).toEqual(["read", "write"]);
  });

  it("R5: a step that answers nothing right after tool_search activated tools is asked once more, not ended empty", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ tool: "tool_search", args: { query: "weather" } }], []]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const steps = await env.query<{ index: number; attempt: number }>("select index, attempt from steps where run_id = $1 order by index", [
      run.body.id,
    ]);
    expect(steps).toEqual([
      { index: 0, attempt: 1 },
      { index: 1, attempt: 2 },
    ]);
    const ends = (await client.events(sessionId)).filter((e) => e.type === "step_end" && e.data.stepIndex === 1);
    expect(ends.map((e) => [e.data.attempt, e.data.finishReason])).toEqual([
      [1, "empty_asked_again"],
      [2, "stop"],
    ]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.filter((m) => m.role === "assistant")).toHaveLength(2);

    // Without a preceding activation an empty answer simply ends the turn.
    const plain = await client.newSession();
    const quiet = await client.startRun(plain.sessionId, script([[]]));
    await client.waitForRun(quiet.body.id);
    expect(await env.query("select attempt from steps where run_id = $1", [quiet.body.id])).toEqual([{ attempt: 1 }]);
  });
});
