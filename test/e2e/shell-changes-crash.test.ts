import { existsSync } from "node:fs";
import { chown, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
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

  it("D3, X7: a worker SIGKILLed after a command's changes were applied and before its result was stored leaves their records to the roll-forward: stored once, under the ids written before the apply", async () => {
    // The worker of the test before is stopped: the one killed here is the one that runs the call. Its
    // Postgres backends check their client while they wait, so a statement it sent before its death
    // is cancelled, not committed once the test lets go of the row.
    await processes.killAll();
    const worker = await processes.start("worker", { ...env.env, PGOPTIONS: "-c client_connection_check_interval=50" });
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "bash", args: { command: "echo once >> appended.txt && sleep 1" } }], [{ text: "never" }]]),
    );
    const [call] = await waitFor(
      async () => {
        const rows = await env.query<{ id: string }>("select id from tool_calls where run_id = $1 and status = 'running'", [run.body.id]);
        return rows.length > 0 ? rows : null;
      },
      20_000,
      "the call to start",
    );
    // The test's own transaction holds the call's row: the result waits for it, after the apply.
    const holder = new pg.Client({ connectionString: env.env.DATABASE_URL });
    await holder.connect();
    await holder.query("begin");
    await holder.query("select 1 from tool_calls where id = $1 for update", [call!.id]);
    const holderPid = (await holder.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid;
    const layers = path.join(env.config.workspaces.dir, ".calls");
    const applied = await waitFor(
      async () => {
        for (const name of await readdir(layers).catch(() => [] as string[]))
          if (existsSync(path.join(layers, name, "applied"))) return path.join(layers, name);
        return null;
      },
      20_000,
      "the command's changes to be applied",
    );
    expect(await readFile(path.join(workspace, "appended.txt"), "utf8")).toBe("once\n");
    const written = JSON.parse(await readFile(path.join(applied, "records.json"), "utf8")) as Array<{ id: string; path: string }>;
    expect(written.map((record) => record.path)).toEqual(["appended.txt"]);
    worker.kill("SIGKILL");
    await worker.exited;
    await waitFor(
      async () =>
        (
          await env.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where $1 = any(pg_blocking_pids(pid))", [
            holderPid,
          ])
        )[0]!.n === 0,
      20_000,
      "the dead worker's statements to be cancelled",
    );
    await holder.query("rollback");
    await holder.end();

    await start("worker");
    expect((await client.waitForRun(run.body.id, 30_000)).status).toBe("interrupted");
    const [ended] = await env.query<{ status: string }>("select status from tool_calls where id = $1", [call!.id]);
    expect(ended!.status).toBe("interrupted");
    await waitFor(async () => (await readdir(layers)).length === 0, 20_000, "the layer to be rolled forward");
    const changes = await env.query<{ id: string; path: string; tool_call_id: string; not_applied: string | null }>(
      "select id, path, tool_call_id, not_applied from file_changes where session_id = $1",
      [sessionId],
    );
    expect(changes).toEqual([{ id: written[0]!.id, path: "appended.txt", tool_call_id: call!.id, not_applied: null }]);
    // Applied once: the roll-forward found the apply done and did not make it again, and the call never ran again.
    expect(await readFile(path.join(workspace, "appended.txt"), "utf8")).toBe("once\n");
  });
});
