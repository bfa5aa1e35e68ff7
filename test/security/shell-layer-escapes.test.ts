import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, waitFor } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { attempt, watch } from "./escape-ledger.js";

// Applying a layered call's changes (SPEC X7) as root, into a workspace the tenant's other processes rearrange meanwhile.
const { env, client } = useTestEnv({ worker: true });
let outside: string;

beforeAll(async () => {
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-layer-")));
  await mkdir(path.join(outside, "target"));
});
afterAll(async () => rm(outside, { recursive: true, force: true }));

/** Waits until some layer's upper folder holds `relative`, and answers that path. */
async function inLayer(relative: string): Promise<string> {
  const layers = path.join(env.config.workspaces.dir, ".calls");
  return waitFor(
    async () => {
      for (const name of await readdir(layers).catch(() => [] as string[])) {
        const candidate = path.join(layers, name, "upper", relative);
        if (await stat(candidate).catch(() => null)) return candidate;
      }
      return null;
    },
    20_000,
    `${relative} in a layer`,
  );
}

describe("escape suite: applying a shell call's layer", () => {
  it("S6, X7: a folder swapped for a symlink to outside while the command ran is never followed; the newer link is kept, the command's files go to the trash, never through it", async () => {
    const { sessionId, projectId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const owner = await stat(workspace);
    await mkdir(path.join(workspace, "sub"));
    await writeFile(path.join(workspace, "sub", "old.txt"), "old\n");
    const { chown } = await import("node:fs/promises");
    await chown(path.join(workspace, "sub"), owner.uid, owner.gid);
    await chown(path.join(workspace, "sub", "old.txt"), owner.uid, owner.gid);

    const canary = watch([outside]);
    await attempt("layer apply through a folder swapped for a symlink", canary, async () => {
      const run = await client.startRun(
        sessionId,
        script([[{ tool: "bash", args: { command: "echo planted > sub/new.txt && sleep 2" } }], [{ text: "done" }]]),
      );
      await inLayer("sub/new.txt");
      // Another process of the tenant points sub at a folder outside before the apply.
      await rename(path.join(workspace, "sub"), path.join(workspace, "sub.real"));
      await symlink(path.join(outside, "target"), path.join(workspace, "sub"));
      expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    });
    expect(await readdir(path.join(outside, "target"))).toEqual([]);
    // The swap is newer than the command's folder: it stays (a later change is never overwritten), and the
    // command's folder, not applied, is kept in the project's trash.
    expect((await lstat(path.join(workspace, "sub"))).isSymbolicLink()).toBe(true);
    expect(await readFile(path.join(workspace, "sub.real", "old.txt"), "utf8")).toBe("old\n");
    const trash = (await client.get<{ entries: Array<{ id: string; path: string; kind: string }> }>(`/v1/projects/${projectId}/trash`)).body
      .entries;
    expect(trash).toContainEqual(expect.objectContaining({ path: "sub", kind: "folder" }));
  });
});
