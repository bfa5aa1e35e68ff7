import { mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// Restoring from a project's trash (SPEC F4) into a workspace a hostile model has rearranged since the delete.
const { env, client } = useTestEnv({ worker: true });
let outside: string;
let canary: Canary;

beforeAll(async () => {
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-restore-")));
  await mkdir(path.join(outside, "etc"), { recursive: true });
});
afterAll(async () => rm(outside, { recursive: true, force: true }));

describe("escape suite: trash restore", () => {
  it("S6, F4: restoring through a parent folder swapped for a symlink is refused, and nothing outside is created", async () => {
    const session = await client.newSession({ approvalMode: "auto" });
    await client.request("PUT", `/v1/projects/${session.projectId}/policy`, { rules: { allow: ["delete"] } });
    const workspace = await env.workspaceOf(session.sessionId);
    await mkdir(path.join(workspace, "etc"));
    await writeFile(path.join(workspace, "etc", "notes.txt"), "inside\n");
    const run = await client.startRun(
      session.sessionId,
      script([[{ tool: "delete", args: { path: "etc/notes.txt" } }], [{ text: "done" }]]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const [entry] = (await client.get<{ entries: Array<{ id: string; path: string }> }>(`/v1/projects/${session.projectId}/trash`)).body
      .entries;
    expect(entry!.path).toBe(path.join("etc", "notes.txt"));

    // The model's shell points etc at a folder outside.
    canary = watch([outside]);
    await rename(path.join(workspace, "etc"), path.join(workspace, "etc.real"));
    await symlink(path.join(outside, "etc"), path.join(workspace, "etc"));
    await attempt("restore through a symlinked parent", canary, async () => {
      const restored = await client.post(`/v1/projects/${session.projectId}/trash/${entry!.id}/restore`);
      expect(restored.status, JSON.stringify(restored.body)).toBeGreaterThanOrEqual(400);
      expect(restored.status).toBeLessThan(500);
      expect(restored.body.error.message).toMatch(/outside the workspace/);
    });
    expect(await readdir(path.join(outside, "etc"))).toEqual([]);

    // Once the folder is back, the same restore works, inside, and the entry is gone from the trash.
    await rm(path.join(workspace, "etc"));
    await rename(path.join(workspace, "etc.real"), path.join(workspace, "etc"));
    expect((await client.post(`/v1/projects/${session.projectId}/trash/${entry!.id}/restore`)).status).toBe(200);
    expect(await readFile(path.join(workspace, "etc", "notes.txt"), "utf8")).toBe("inside\n");
    expect((await client.get<{ entries: unknown[] }>(`/v1/projects/${session.projectId}/trash`)).body.entries).toEqual([]);
  });
});
