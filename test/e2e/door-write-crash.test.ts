import { chown, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { processGroup } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

// `write` and `edit` calls (SPEC F1) whose worker dies after the door placed the new version and before the
// call's result was stored: the failpoint kills the process there, as a SIGKILL would. Its own env, so no other
// worker takes the calls.
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

describe("crash recovery of a door write", () => {
  for (const [name, args, expected] of [
    ["edit", { path: "kept.txt", old_string: "before", new_string: "after" }, { existedBefore: true, content: "after\n" }],
    ["write", { path: "made/new.txt", content: "new\n" }, { existedBefore: false, content: "new\n" }],
  ] as const) {
    it(`D3, F1: ${name === "edit" ? "an" : "a"} ${name} call whose worker is killed after its change was made and before its result was stored is interrupted, never run again, and its change is recorded once, under the id journaled before the change`, async () => {
      const killed = await processes.start("worker", { ...env.env, FOYA_FAILPOINTS: "worker.tool_ran" });
      const { sessionId } = await client.newSession({ approvalMode: "auto" });
      const workspace = await env.workspaceOf(sessionId);
      const owner = await stat(workspace);
      await writeFile(path.join(workspace, "kept.txt"), "before\n");
      await chown(path.join(workspace, "kept.txt"), owner.uid, owner.gid);
      const run = await client.startRun(sessionId, script([[{ tool: name, args }], [{ text: "never" }]]));
      await killed.exited;

      // Made, and its record kept beside the workspace.
      const file = path.join(workspace, args.path);
      expect(await readFile(file, "utf8")).toBe(expected.content);
      const journals = path.join(env.config.workspaces.dir, ".calls");
      const [folder, ...others] = await readdir(journals);
      expect(others).toEqual([]);
      const journaled = JSON.parse(await readFile(path.join(journals, folder!, "records.json"), "utf8")) as Array<{ id: string }>;
      expect(journaled).toHaveLength(1);

      await processes.start("worker", env.env);
      expect((await client.waitForRun(run.body.id, 30_000)).status).toBe("interrupted");
      const [call] = await env.query<{ id: string; status: string }>("select id, status from tool_calls where run_id = $1", [run.body.id]);
      expect(call!.status).toBe("interrupted");
      await waitFor(async () => (await readdir(journals)).length === 0, 20_000, "the journal to be rolled forward");
      const changes = await env.query<{
        id: string;
        path: string;
        tool_call_id: string;
        existed_before: boolean;
        not_applied: string | null;
      }>("select id, path, tool_call_id, existed_before, not_applied from file_changes where session_id = $1", [sessionId]);
      expect(changes).toEqual([
        { id: journaled[0]!.id, path: args.path, tool_call_id: call!.id, existed_before: expected.existedBefore, not_applied: null },
      ]);
      expect(await readFile(file, "utf8")).toBe(expected.content);
      await processes.killAll();
    });
  }
});
