import { describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true });

interface Span {
  callId: string;
  start: number;
  end: number;
  concurrentAtStart: number;
}

/** Runs one batch of calls and answers each call's span, from the probe's marker file. */
async function runBatch(calls: object[]): Promise<{ sessionId: string; runId: string; spans: Map<string, Span> }> {
  const { sessionId } = await client.newSession();
  const run = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
  expect((await client.waitForRun(run.body.id)).status).toBe("completed");
  const spans = new Map<string, Span>();
  for (const line of await readMarkers(await env.workspaceOf(sessionId), "lanes")) {
    const [kind, callId, time, concurrent] = line.split(" ") as [string, string, string, string?];
    const span = spans.get(callId) ?? { callId, start: 0, end: 0, concurrentAtStart: 0 };
    if (kind === "start") Object.assign(span, { start: Number(time), concurrentAtStart: Number(concurrent) });
    else span.end = Number(time);
    spans.set(callId, span);
  }
  return { sessionId, runId: run.body.id, spans };
}

const probe = (sleepMs: number, extra: object = {}) => ({ tool: "probe", args: { marker: "lanes", sleepMs, ...extra } });
const overlaps = (a: Span, b: Span) => a.start < b.end && b.start < a.end;

describe("parallel lanes", () => {
  it("P3: at most 5 calls of one batch run at once, measured by a tool that counts concurrent runs", async () => {
    const { spans } = await runBatch(Array.from({ length: 8 }, () => probe(300)));
    expect(spans.size).toBe(8);
    expect(Math.max(...[...spans.values()].map((s) => s.concurrentAtStart))).toBe(5);
  });

  it("P1, P2: consecutive parallel calls run together; a serial call never overlaps another and keeps model order", async () => {
    const { spans } = await runBatch([probe(200), probe(200), probe(200, { parallel: false }), probe(200), probe(200)]);
    const [a, b, serial, d, e] = ["call_0_0", "call_0_1", "call_0_2", "call_0_3", "call_0_4"].map((id) => spans.get(id)!);
    expect(overlaps(a!, b!)).toBe(true);
    expect(overlaps(d!, e!)).toBe(true);
    for (const other of [a, b, d, e]) expect(overlaps(serial!, other!)).toBe(false);
    expect(serial!.start).toBeGreaterThanOrEqual(Math.max(a!.end, b!.end));
    expect(Math.min(d!.start, e!.start)).toBeGreaterThanOrEqual(serial!.end);
  });

  it("P4: results return in the model's call order whatever order they finished in; one failure never cancels its siblings", async () => {
    const { sessionId, spans } = await runBatch([probe(400), probe(50, { fail: true }), probe(200)]);
    const finishOrder = [...spans.values()].sort((x, y) => x.end - y.end).map((s) => s.callId);
    expect(finishOrder).toEqual(["call_0_1", "call_0_2", "call_0_0"]);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    const results = messages.filter((m) => m.role === "tool").map((m) => [m.content.callId, m.content.status]);
    expect(results).toEqual([
      ["call_0_0", "succeeded"],
      ["call_0_1", "failed"],
      ["call_0_2", "succeeded"],
    ]);
  });

  it("P5: file writes are never parallel, however independent they look", () => {
    const executor = env.services.executor;
    expect(executor.isParallel({ callId: "w", name: "write", argumentsRaw: '{"path":"a.txt","content":"x"}' })).toBe(false);
    expect(executor.isParallel({ callId: "r", name: "read", argumentsRaw: '{"path":"a.txt"}' })).toBe(true);
    // The capability may look at the arguments; anything that does not validate is serial.
    expect(executor.isParallel({ callId: "p", name: "probe", argumentsRaw: '{"marker":"m","sleepMs":1,"parallel":false}' })).toBe(false);
    expect(executor.isParallel({ callId: "x", name: "read", argumentsRaw: "{not json" })).toBe(false);
  });
});
