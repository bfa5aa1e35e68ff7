import { chmod, link, mkdir, mkdtemp, readFile, realpath, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// Revert (SPEC F3) through the API, on a workspace a hostile model has rearranged since the change.
const { env, client } = useTestEnv({ worker: true });
let outside: string;
let canary: Canary;

beforeAll(async () => {
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-revert-")));
  await mkdir(path.join(outside, "etc"), { recursive: true });
  await writeFile(path.join(outside, "etc", "notes.txt"), "outside original\n");
  canary = watch([outside]);
});
afterAll(async () => rm(outside, { recursive: true, force: true }));

async function writeThroughTool(sessionId: string | undefined, file: string, content: string) {
  const { sessionId: id } = sessionId ? { sessionId } : await client.newSession();
  const run = await client.startRun(id, script([[{ tool: "write", args: { path: file, content } }], [{ text: "done" }]]));
  expect((await client.waitForRun(run.body.id)).status).toBe("completed");
  const changes = (await client.get(`/v1/sessions/${id}/file-changes`)).body.fileChanges as Array<{ id: string; path: string }>;
  return { sessionId: id, change: changes[changes.length - 1]! };
}

describe("escape suite: revert", () => {
  it("S6: reverting through a parent folder swapped for a symlink is refused, and nothing outside is created, changed or removed", async () => {
    // An overwrite of etc/notes.txt, and the creation of etc/new.txt (whose revert would trash it).
    const { sessionId, change: created } = await writeThroughTool(undefined, "etc/new.txt", "created\n");
    const workspace = await env.workspaceOf(sessionId);
    await writeFile(path.join(workspace, "etc", "notes.txt"), "inside original\n");
    const { change: overwrite } = await writeThroughTool(sessionId, "etc/notes.txt", "inside changed\n");
    // The model's shell then points etc at a folder outside holding files of the same names.
    await writeFile(path.join(outside, "etc", "new.txt"), "created\n");
    await writeFile(path.join(outside, "etc", "notes.txt"), "inside changed\n");
    canary = watch([outside]);
    await rename(path.join(workspace, "etc"), path.join(workspace, "etc.real"));
    await symlink(path.join(outside, "etc"), path.join(workspace, "etc"));
    for (const [name, change] of [
      ["revert an overwrite through a symlinked parent", overwrite],
      ["revert a creation (a trash) through a symlinked parent", created],
    ] as const) {
      await attempt(name, canary, async () => {
        const reverted = await client.post(`/v1/file-changes/${change.id}/revert`);
        expect(reverted.status, JSON.stringify(reverted.body)).toBe(409);
        expect(reverted.body.error.message).toMatch(/outside the workspace/);
      });
    }
    await attempt("revert every later change through a symlinked parent", canary, async () => {
      expect((await client.post(`/v1/file-changes/${created.id}/revert`, { andLater: true })).status).toBe(409);
    });
    // Once the folder is back, the same reverts work, and only inside.
    await rm(path.join(workspace, "etc"));
    await rename(path.join(workspace, "etc.real"), path.join(workspace, "etc"));
    expect((await client.post(`/v1/file-changes/${overwrite.id}/revert`)).status).toBe(200);
    expect(await readFile(path.join(workspace, "etc", "notes.txt"), "utf8")).toBe("inside original\n");
    expect(await readFile(path.join(outside, "etc", "notes.txt"), "utf8")).toBe("inside changed\n");
  });

  it("S6: a revert whose file became a link to a file outside, or a hard link to one, is refused", async () => {
    const { sessionId, change } = await writeThroughTool(undefined, "target.txt", "mine\n");
    const workspace = await env.workspaceOf(sessionId);
    await writeFile(path.join(outside, "victim.txt"), "mine\n");
    canary = watch([outside]);
    await rm(path.join(workspace, "target.txt"));
    await symlink(path.join(outside, "victim.txt"), path.join(workspace, "target.txt"));
    await attempt("revert onto a symlink to a file outside", canary, async () => {
      expect((await client.post(`/v1/file-changes/${change.id}/revert`)).status).toBe(409);
    });
    await rm(path.join(workspace, "target.txt"));
    await link(path.join(outside, "victim.txt"), path.join(workspace, "target.txt"));
    await attempt("revert onto a hard link to a file outside", canary, async () => {
      const reverted = await client.post(`/v1/file-changes/${change.id}/revert`);
      expect(reverted.status).toBe(409);
      expect(reverted.body.error.message).toMatch(/hard link/);
    });
  });

  it("S7: a revert restores permission bits but never setuid or setgid", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    // A setuid file the model planted (as root could, before tools stepped down), then changed by a tool.
    await writeFile(path.join(workspace, "tool.sh"), "#!/bin/sh\nid\n");
    await chmod(path.join(workspace, "tool.sh"), 0o4755);
    const { change } = await writeThroughTool(sessionId, "tool.sh", "#!/bin/sh\nid -u\n");
    expect((await stat(path.join(workspace, "tool.sh"))).mode & 0o7777).toBe(0o755);
    expect((await client.post(`/v1/file-changes/${change.id}/revert`)).status).toBe(200);
    expect(await readFile(path.join(workspace, "tool.sh"), "utf8")).toBe("#!/bin/sh\nid\n");
    expect((await stat(path.join(workspace, "tool.sh"))).mode & 0o7777).toBe(0o755);
  });
});
