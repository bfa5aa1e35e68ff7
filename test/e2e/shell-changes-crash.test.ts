import { chown, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { processGroup } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

// A layered bash call (SPEC X7) whose worker process is SIGKILLed mid-command: its own env, so no other worker takes the call.
let env: TestEnv;
let client: ApiClient;
const processes = processGroup();
const start = (role: "api" | "worker") => processes.start(role, env.env);

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant();
});
afterAll(async () => {
  await processes.killAll();
  await env?.close();
});

describe("crash recovery of a layered shell call", () => {
  it("D3, X7: a bash call killed with its worker is interrupted, and what it wrote before is recorded as its file changes and applied by the next worker", async () => {
    const worker = await start("worker");
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await writeFile(path.join(workspace, "kept.txt"), "before\n");
    await chown(path.join(workspace, "kept.txt"), (await stat(workspace)).uid, (await stat(workspace)).gid);
    const run = await client.startRun(
      sessionId,
      script([
        [{ tool: "bash", args: { command: "echo partial > written.txt && echo after >> kept.txt && sleep 60" } }],
        [{ text: "never" }],
      ]),
    );
    // The command's writes sit in its layer, not yet in the workspace. The test waits for the content, not
    // the file: `>` creates it empty before echo writes, and a kill in between leaves it empty (as applied).
    const layers = path.join(env.config.workspaces.dir, ".calls");
    await waitFor(
      async () => {
        const names = await readdir(layers).catch(() => [] as string[]);
        for (const name of names) {
          const upper = path.join(layers, name, "upper");
          const written = await readFile(path.join(upper, "written.txt"), "utf8").catch(() => "");
          const kept = await readFile(path.join(upper, "kept.txt"), "utf8").catch(() => "");
          if (written === "partial\n" && kept === "before\nafter\n") return true;
        }
        return false;
      },
      20_000,
      "the command to write in its layer",
    );
    await expect(stat(path.join(workspace, "written.txt"))).rejects.toThrow();
    worker.kill("SIGKILL");
    await worker.exited;

    await start("worker");
    expect((await client.waitForRun(run.body.id, 30_000)).status).toBe("interrupted");
    const [call] = await env.query<{ id: string; status: string }>("select id, status from tool_calls where run_id = $1", [run.body.id]);
    expect(call!.status).toBe("interrupted");
    await waitFor(
      async () => (await stat(path.join(workspace, "written.txt")).catch(() => null)) !== null,
      20_000,
      "the layer to be rolled forward",
    );
    expect(await readFile(path.join(workspace, "written.txt"), "utf8")).toBe("partial\n");
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("before\nafter\n");
    const changes = await env.query<{ path: string; tool_call_id: string }>(
      "select path, tool_call_id from file_changes where session_id = $1 order by path",
      [sessionId],
    );
    expect(changes).toEqual([
      { path: "kept.txt", tool_call_id: call!.id },
      { path: "written.txt", tool_call_id: call!.id },
    ]);
    expect(await readdir(layers)).toEqual([]);
    // The call is never run again: its command wrote once.
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("before\nafter\n");
  });
});
