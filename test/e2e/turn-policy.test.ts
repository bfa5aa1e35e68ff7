import { describe, expect, it } from "vitest";
import { script, waitFor } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true });

const slowTurn = (label: string) =>
  script([[{ tool: "marker_sleep", args: { marker: label, sleepMs: 800 } }], [{ text: `${label} done` }]]);

async function waitUntilRunning(runId: string): Promise<void> {
  await waitFor(async () => (await client.get(`/v1/runs/${runId}`)).body.status === "running", 20_000, "the run to start");
}

describe("a second turn while one is active", () => {
  it("X6: is rejected with 409 by default and the active run goes on", async () => {
    const { sessionId } = await client.newSession();
    const first = await client.startRun(sessionId, slowTurn("reject"));
    await waitUntilRunning(first.body.id);
    const second = await client.startRun(sessionId, "again");
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe("conflict");
    expect(second.body.error.message).toContain(first.body.id);
    expect((await client.waitForRun(first.body.id)).status).toBe("completed");
    expect((await env.query("select id from runs where session_id = $1", [sessionId])).length).toBe(1);
  });

  it("X6: is enqueued when asked, and runs after the active one with its history", async () => {
    const { sessionId } = await client.newSession();
    const first = await client.startRun(sessionId, slowTurn("enqueue"));
    await waitUntilRunning(first.body.id);
    const second = await client.startRun(sessionId, script([[{ text: "second" }]]), "enqueue");
    expect(second.status).toBe(202);
    expect(second.body.status).toBe("queued");
    expect(second.body.ordinal).toBeNull();
    const third = await client.startRun(sessionId, script([[{ text: "third" }]]), "enqueue");
    const runs = await Promise.all([first, second, third].map((run) => client.waitForRun(run.body.id)));
    expect(runs.map((run) => run.status)).toEqual(["completed", "completed", "completed"]);
    expect(runs.map((run) => run.ordinal)).toEqual([1, 2, 3]);
    expect(new Date(runs[1].endedAt) >= new Date(runs[0].endedAt)).toBe(true);
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.filter((m) => m.role === "assistant").map((m) => m.content.text)).toEqual(["", "enqueue done", "second", "third"]);
  });

  it("X6: interrupts the active run when asked; the new run starts at once", async () => {
    const { sessionId } = await client.newSession();
    const first = await client.startRun(sessionId, slowTurn("interrupt"));
    await waitUntilRunning(first.body.id);
    const second = await client.startRun(sessionId, script([[{ text: "took over" }]]), "interrupt");
    expect(second.status).toBe(202);
    const [a, b] = await Promise.all([client.waitForRun(first.body.id), client.waitForRun(second.body.id)]);
    expect(a.status).toBe("cancelled");
    expect(a.error.code).toBe("superseded");
    expect(b.status).toBe("completed");
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.at(-1).content.text).toBe("took over");
  });

  it("X6: deleting a session cancels its active and waiting runs", async () => {
    const { sessionId } = await client.newSession();
    const first = await client.startRun(sessionId, slowTurn("delete"));
    const second = await client.startRun(sessionId, "later", "enqueue");
    await waitUntilRunning(first.body.id);
    expect((await client.delete(`/v1/sessions/${sessionId}`)).status).toBe(204);
    expect((await client.get(`/v1/runs/${first.body.id}`)).body.status).toBe("cancelled");
    expect((await client.get(`/v1/runs/${second.body.id}`)).body.status).toBe("cancelled");
    expect((await client.startRun(sessionId, "after delete")).status).toBe(404);
  });
});
