import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, script } from "../helpers/api-client.js";
import { processGroup } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * A worker short of file descriptors (SPEC X7, T4): one call's spawn that met EMFILE was an
 * unheard `error` event that ended the whole process, and applying a call that touched 20,000
 * folders held one descriptor per folder. The worker is a real process; its limit is lowered from
 * outside with prlimit, as an operator's ulimit or a crowded host would.
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

const openDescriptors = async (pid: number) => (await readdir(`/proc/${pid}/fd`)).length;
async function setSoftLimit(pid: number, soft: number | "hard"): Promise<void> {
  const hard = /^Max open files\s+\S+\s+(\S+)/m.exec(await readFile(`/proc/${pid}/limits`, "utf8"))?.[1];
  await execa("prlimit", [`--pid=${pid}`, `--nofile=${soft === "hard" ? hard : soft}:`]);
}

describe("a worker short of file descriptors", () => {
  it("T4, X7: a call whose process cannot be spawned for want of descriptors fails on its own; the worker lives on and runs the next call", async () => {
    const worker = await processes.start("worker", env.env);
    let exited = false;
    void worker.exited.then(() => {
      exited = true;
    });
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    // Warm: the worker's connections and its first sandbox are made with room to spare.
    const warm = await client.startRun(sessionId, script([[{ tool: "bash", args: { command: "echo warm" } }], [{ text: "ok" }]]));
    expect((await client.waitForRun(warm.body.id)).status).toBe("completed");

    // Room for a few more descriptors: the worker's Postgres pool may open a connection or two meanwhile (it grows
    // when its timers and the run's queries overlap), and a spawn still cannot start (its pipes alone take 8).
    await setSoftLimit(worker.pid, (await openDescriptors(worker.pid)) + 4);
    const starved = await client.startRun(sessionId, script([[{ tool: "bash", args: { command: "echo starved" } }], [{ text: "ok" }]]));
    const starvedRun = await client.waitForRun(starved.body.id, 30_000);
    expect(exited, worker.output().slice(-2000)).toBe(false);
    const [call] = await env.query<{ status: string; error_code: string | null }>(
      "select status, error_code from tool_calls where run_id = $1",
      [starvedRun.id],
    );
    // The call could not start its process: an is_error result the model can act on, never a crash.
    expect(call).toMatchObject({ status: "failed", error_code: "sandbox_unavailable" });

    await setSoftLimit(worker.pid, "hard");
    const after = await client.startRun(sessionId, script([[{ tool: "bash", args: { command: "echo after" } }], [{ text: "ok" }]]));
    expect((await client.waitForRun(after.body.id)).status).toBe("completed");
    expect(exited).toBe(false);
    worker.kill("SIGKILL");
    await worker.exited;
  });

  it("X7: a call that created 3,000 folders is recorded and applied by a worker allowed 512 descriptors", async () => {
    const worker = await processes.start("worker", env.env);
    await setSoftLimit(worker.pid, 512);
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const command = `/usr/bin/python3 -c "import os
for i in range(3000):
    os.makedirs(f'd{i}/inner')
    open(f'd{i}/inner/f', 'w').write(str(i))"`;
    const run = await client.startRun(sessionId, script([[{ tool: "bash", args: { command } }], [{ text: "ok" }]]));
    expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
    const [call] = await env.query<{ status: string; text: string }>(
      "select status, result->0->>'text' as text from tool_calls where run_id = $1",
      [run.body.id],
    );
    expect(call!.status, call!.text).toBe("succeeded");
    const workspace = await env.workspaceOf(sessionId);
    expect(await readFile(path.join(workspace, "d2999", "inner", "f"), "utf8")).toBe("2999");
    expect((await readdir(workspace)).filter((name) => name.startsWith("d"))).toHaveLength(3000);
    const [{ n }] = (await env.query<{ n: number }>("select count(*)::int as n from file_changes where run_id = $1", [run.body.id])) as [
      { n: number },
    ];
    // The first 2,000 files one by one (the recording limit), the rest summarized in the result.
    expect(n).toBe(2000);
    expect(call!.text).toContain("1000 changed files were past the recording limits");
  });
});
