import { describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true });

describe("streamed tool calls", () => {
  it("T2: raw argument strings are stored byte for byte as streamed", async () => {
    const raws = [
      '{ "marker" :"t2",\n  "sleepMs": 0 }',
      '{"marker":"caf\\u00e9 \u00e9t\u00e9 \ud83d\ude80","sleepMs":0.0e0}',
      '  {"marker":"\\"quoted\\"" }  ',
    ];
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([raws.map((argsRaw) => ({ tool: "noop", argsRaw, chunks: 7 }))]));
    await client.waitForRun(run.body.id);
    const stored = await env.query<{ arguments_raw: string }>(
      "select arguments_raw from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    expect(stored.map((row) => row.arguments_raw)).toEqual(raws);
    const assistant = (await client.messages(sessionId)).find((m) => m.role === "assistant");
    expect(assistant.content.toolCalls.map((call: { argumentsRaw: string }) => call.argumentsRaw)).toEqual(raws);
    // What clients saw streamed adds up to the same strings.
    const deltas = new Map<string, string>();
    for (const event of await client.events(sessionId)) {
      if (event.type === "tool_update" && event.data.argumentsDelta !== undefined) {
        deltas.set(event.data.callId, (deltas.get(event.data.callId) ?? "") + event.data.argumentsDelta);
      }
    }
    expect([...deltas.values()]).toEqual(raws);
  });

  it("L1: tool_begin precedes the end of argument streaming; the tool starts after the arguments are complete", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "noop", args: { marker: "l1-marker-with-a-long-name" }, chunks: 10 }]], { chunkDelayMs: 40 }),
    );
    await client.waitForRun(run.body.id);
    const events = await client.events(sessionId);
    const begin = events.find((e) => e.type === "tool_begin");
    const argumentUpdates = events.filter((e) => e.type === "tool_update" && e.data.argumentsDelta !== undefined);
    const started = events.find((e) => e.type === "tool_update" && e.data.status === "running");
    const stepEnd = events.find((e) => e.type === "step_end");
    expect(begin).toBeDefined();
    expect(argumentUpdates.length).toBeGreaterThan(1);
    expect(begin.seq).toBeLessThan(argumentUpdates[0].seq);
    // tool_begin was broadcast while arguments were still streaming, not after.
    expect(new Date(begin.at).getTime()).toBeLessThan(new Date(argumentUpdates.at(-1).at).getTime());
    expect(started.seq).toBeGreaterThan(argumentUpdates.at(-1).seq);
    expect(started.seq).toBeGreaterThan(stepEnd.seq);
    expect(begin.data).toMatchObject({ name: "noop", status: "queued", callIndex: 0 });
  });

  it("L4: a run emits run_start, step_start, text_delta, tool_begin, tool_update, tool_end, step_end and run_end", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "look" }, { tool: "noop", args: {} }], [{ text: "done" }]]));
    await client.waitForRun(run.body.id);
    const types = new Set((await client.events(sessionId)).map((e) => e.type));
    for (const type of ["run_start", "step_start", "text_delta", "tool_begin", "tool_update", "tool_end", "step_end", "run_end"]) {
      expect(types.has(type), type).toBe(true);
    }
  });

  it("T3: a result carries text, image and artifact references, a display diff and file-change records, each to its place", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ tool: "rich_result", args: {} }], [{ text: "ok" }]]));
    await client.waitForRun(run.body.id);
    const message = (await client.messages(sessionId)).find((m) => m.role === "tool");
    expect(message.content.content).toEqual([
      { type: "text", text: "made a chart" },
      { type: "image", artifactId: "art_chart", mediaType: "image/png" },
      { type: "artifact", artifactId: "art_data", mediaType: "text/csv", name: "data.csv" },
    ]);
    expect(JSON.stringify(message.content)).not.toContain("chart.txt");
    const end = (await client.events(sessionId)).find((e) => e.type === "tool_end");
    expect(end.data.preview).toBe("made a chart\n[image art_chart]\n[artifact art_data]");
    expect(end.data.diff).toContain("+++ b/chart.txt");
    const [change] = await env.query<{ id: string; path: string; tool_call_id: string; existed_before: boolean; mode_after: number }>(
      "select f.id, f.path, f.tool_call_id, f.existed_before, f.mode_after from file_changes f join tool_calls c on c.id = f.tool_call_id where c.run_id = $1",
      [run.body.id],
    );
    expect(change).toMatchObject({ path: "chart.txt", existed_before: false, mode_after: 0o644 });
    expect(end.data.fileChanges).toEqual([
      { id: change!.id, path: "chart.txt", existedBefore: false, sha256Before: null, sha256After: "ab".repeat(32) },
    ]);
  });

  it("L2: a finished call is written twice: tool_end with the display diff for clients, a tool message without it for the model", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ tool: "show_diff", args: { text: "changed x" } }], [{ text: "ok" }]]));
    await client.waitForRun(run.body.id);
    const end = (await client.events(sessionId)).find((e) => e.type === "tool_end");
    expect(end.data).toMatchObject({ status: "succeeded", preview: "changed x", diff: expect.stringContaining("+new") });
    const message = (await client.messages(sessionId)).find((m) => m.role === "tool");
    expect(message.content.content).toEqual([{ type: "text", text: "changed x" }]);
    expect(JSON.stringify(message.content)).not.toContain("+new");
  });

  it("X1: every streamed event names the step attempt that produced it", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "one" }, { tool: "noop", args: {} }], [{ text: "two" }]]));
    await client.waitForRun(run.body.id);
    for (const event of await client.events(sessionId)) {
      if (["run_start", "run_end"].includes(event.type)) continue;
      expect(event.step, event.type).toEqual({ index: expect.any(Number), attempt: 1 });
    }
  });
});
