import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunId } from "../../src/ids.js";
import { type ApiClient, script } from "../helpers/api-client.js";
import { folderSnapshot } from "../helpers/folder-snapshot.js";
import { processGroup } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * A rewind's workspace order (SPEC W2) is carried out by the project's next batch; a worker that
 * dies after rebuilding the folder but before clearing the order leaves it standing, and the next
 * batch rebuilds again from the store: the folder ends as the rewound tree, whatever the dead
 * worker or anyone else left there.
 */
let env: TestEnv;
let client: ApiClient;
const processes = processGroup();

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant();
});
afterAll(async () => {
  await processes.killAll();
  await env?.close();
});

const write = (file: string, content: string) => ({ tool: "write", args: { path: file, content } });
const read = (file: string) => ({ tool: "read", args: { path: file } });

describe("a rewind and a worker's death", () => {
  it("W2, D3: a worker SIGKILLed after rebuilding the rewound folder, before clearing the order: the next batch rebuilds it again, the interrupted call is never run again, and the run carries on on the rewound tree", async () => {
    await processes.start("worker", env.env);
    const { sessionId, projectId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const first = await client.startRun(sessionId, script([[write("a.txt", "one\n")], [{ text: "one" }]]));
    expect((await client.waitForRun(first.body.id, 30_000)).status).toBe("completed");
    const rewoundTree = await folderSnapshot(workspace);
    const second = await client.startRun(sessionId, script([[write("b.txt", "two\n"), write("a.txt", "changed\n")], [{ text: "two" }]]));
    expect((await client.waitForRun(second.body.id, 30_000)).status).toBe("completed");
    await processes.killAll();

    const rewound = await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { runId: first.body.id } });
    expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
    const order = async () =>
      (await env.query<{ reset: string | null }>("select workspace_reset_to as reset from projects where id = $1", [projectId]))[0]?.reset;
    expect(await order()).toBe(rewound.body.checkpointId);

    const crashing = await processes.start("worker", { ...env.env, FOYA_FAILPOINTS: "worker.workspace_reset_rebuilt" });
    const third = await client.post(`/v1/sessions/${sessionId}/runs`, {
      input: script([[read("a.txt")], [read("a.txt")], [{ text: "three" }]]),
      onInterrupted: "continue",
    });
    expect(third.status).toBe(202);
    expect((await crashing.exited).signal).toBe("SIGKILL");
    // Rebuilt, the order still standing. Whatever is in the folder now is not the store's word.
    expect(await order()).toBe(rewound.body.checkpointId);
    expect(await folderSnapshot(workspace)).toEqual(rewoundTree);
    await writeFile(path.join(workspace, "left-behind.txt"), "not in any checkpoint\n");

    await processes.start("worker", env.env);
    const ended = await client.waitForRun(third.body.id as RunId, 60_000);
    expect(ended.status).toBe("completed");
    expect(await order()).toBeNull();
    expect(await folderSnapshot(workspace)).toEqual(rewoundTree);
    expect(await readFile(path.join(workspace, "a.txt"), "utf8")).toBe("one\n");
    // The first read was marked running by the batch's claim before the folder was rebuilt: interrupted, never run again.
    const calls = await env.query<{ step_index: number; status: string }>(
      "select step_index, status from tool_calls where run_id = $1 order by step_index",
      [third.body.id],
    );
    expect(calls).toEqual([
      { step_index: 0, status: "interrupted" },
      { step_index: 1, status: "succeeded" },
    ]);
    const results = await client.toolMessages(sessionId);
    expect(JSON.stringify(results.at(-1).content)).toContain("one");
    const restored = (await client.events(sessionId)).filter((event) => event.type === "workspace_restored");
    expect(restored.map((event) => event.data.reason)).toEqual(["rewound"]);
  }, 120_000);
});
