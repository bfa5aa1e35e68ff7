import { mkdir, readFile, readdir, stat, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { projectTrashRoot, trashPlacer } from "../../src/workspace/project-trash.js";
import { script, waitFor, type ApiClient, type ApiResponse } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";

/**
 * Each project's own trash (SPEC F4): what `delete` removes goes to a trash folder of the
 * project, outside every workspace, listed and restored through the API, pruned after the
 * retention, and never shown to another project or tenant.
 */
const { env, client } = useTestEnv({ worker: true });

type Entry = { id: string; path: string; kind: string; bytes: number | null; deletedAt: string };

/** A session whose policy lets `delete` run without asking. */
async function deletingSession(owner: ApiClient = client): Promise<{ sessionId: string; projectId: string; workspace: string }> {
  const session = await owner.newSession({ approvalMode: "auto" });
  await owner.request("PUT", `/v1/projects/${session.projectId}/policy`, { rules: { allow: ["delete"] } });
  return { ...session, workspace: await env.workspaceOf(session.sessionId) };
}

async function run(owner: ApiClient, sessionId: string, calls: object[]): Promise<void> {
  const started = await owner.startRun(sessionId, script([calls, [{ text: "done" }]]));
  expect((await owner.waitForRun(started.body.id)).status).toBe("completed");
  const failed = await env.query("select name, error_code from tool_calls where run_id = $1 and status <> 'succeeded'", [started.body.id]);
  expect(failed).toEqual([]);
}

const trashOf = async (owner: ApiClient, projectId: string) => owner.get<{ entries: Entry[] }>(`/v1/projects/${projectId}/trash`);

describe("project trash", () => {
  it("F4: each project's trash lists what delete removed and restores it by id, byte for byte; no other project or tenant sees it", async () => {
    const a = await deletingSession();
    const b = await deletingSession();
    const other = await env.newTenant("other tenant");
    await mkdir(path.join(a.workspace, "docs", "deep"), { recursive: true });
    await writeFile(path.join(a.workspace, "notes.txt"), "one\ntwo\n");
    await writeFile(path.join(a.workspace, "docs", "deep", "x.md"), "# x\n");
    await run(client, a.sessionId, [
      { tool: "delete", args: { path: "notes.txt" } },
      { tool: "delete", args: { path: "docs" } },
    ]);
    await expect(stat(path.join(a.workspace, "notes.txt"))).rejects.toThrow();

    const listed = await trashOf(client, a.projectId);
    expect(listed.status).toBe(200);
    expect(listed.body.entries.map((entry) => [entry.path, entry.kind, entry.bytes]).sort()).toEqual([
      ["docs", "folder", null],
      ["notes.txt", "file", 8],
    ]);
    // Ids are time-ordered UUIDs (version 7), so the listing pages by name, newest first.
    for (const entry of listed.body.entries) expect(entry.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    // The trash is the project's own, outside the workspace, not the worker user's home trash.
    const root = projectTrashRoot(env.config.workspaces.dir, a.workspace);
    expect(path.relative(a.workspace, root).startsWith("..")).toBe(true);
    expect((await readdir(path.join(root, "Trash", "files"))).sort()).toEqual(listed.body.entries.map((entry) => entry.id).sort());

    // Nobody else sees or restores it.
    expect((await trashOf(client, b.projectId)).body.entries).toEqual([]);
    expect((await trashOf(other, a.projectId)).status).toBe(404);
    const notes = listed.body.entries.find((entry) => entry.path === "notes.txt")!;
    const docs = listed.body.entries.find((entry) => entry.path === "docs")!;
    expect((await other.post(`/v1/projects/${a.projectId}/trash/${notes.id}/restore`)).status).toBe(404);
    expect((await client.post(`/v1/projects/${b.projectId}/trash/${notes.id}/restore`)).status).toBe(404);

    expect(await client.post(`/v1/projects/${a.projectId}/trash/${notes.id}/restore`)).toMatchObject({
      status: 200,
      body: { path: "notes.txt" },
    });
    expect(await readFile(path.join(a.workspace, "notes.txt"), "utf8")).toBe("one\ntwo\n");
    expect((await client.post(`/v1/projects/${a.projectId}/trash/${notes.id}/restore`)).status).toBe(404);

    // Never over something that is there again: 409, and both stay as they are.
    await mkdir(path.join(a.workspace, "docs"));
    await writeFile(path.join(a.workspace, "docs", "new.md"), "new\n");
    const refused = await client.post(`/v1/projects/${a.projectId}/trash/${docs.id}/restore`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/exists again/);
    expect(await readFile(path.join(a.workspace, "docs", "new.md"), "utf8")).toBe("new\n");
    await run(client, a.sessionId, [{ tool: "delete", args: { path: "docs" } }]);
    expect(await client.post(`/v1/projects/${a.projectId}/trash/${docs.id}/restore`)).toMatchObject({
      status: 200,
      body: { path: "docs" },
    });
    expect(await readFile(path.join(a.workspace, "docs", "deep", "x.md"), "utf8")).toBe("# x\n");
    // What is left: the second docs folder (new.md), deleted just now.
    expect((await trashOf(client, a.projectId)).body.entries.map((entry) => entry.path)).toEqual(["docs"]);
  });

  it("F4: the trash is listed in pages (?limit=, ?after= the previous page's next): every entry once, newest first; a bad cursor or limit answers 400", async () => {
    const { projectId, workspace } = await deletingSession();
    const root = projectTrashRoot(env.config.workspaces.dir, workspace);
    // 650 entries as the removals of shell calls leave them (trashPlacer), far quicker than 650 delete calls.
    for (let i = 0; i < 650; i++) {
      const file = path.join(workspace, `f${i}.txt`);
      await writeFile(file, `${i}\n`);
      trashPlacer(root).place(file, file);
    }
    const seen: Entry[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page: ApiResponse<{ entries: Entry[]; next: string | null }> = await client.get(
        `/v1/projects/${projectId}/trash?limit=200${after ? `&after=${after}` : ""}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.entries.length).toBeLessThanOrEqual(200);
      seen.push(...page.body.entries);
      after = page.body.next;
      pages++;
    } while (after !== null);
    expect(pages).toBe(4);
    expect(seen).toHaveLength(650);
    expect(new Set(seen.map((entry) => entry.path)).size).toBe(650);
    const ids = seen.map((entry) => entry.id);
    expect(ids).toEqual([...ids].sort().reverse());
    // Without a limit: the first 100.
    expect((await trashOf(client, projectId)).body.entries).toHaveLength(100);
    expect((await client.get(`/v1/projects/${projectId}/trash?limit=501`)).status).toBe(400);
    expect((await client.get(`/v1/projects/${projectId}/trash?after=../../etc`)).status).toBe(400);
  });

  it("F4: the sweeper deletes trash entries older than the retention for good and keeps younger ones", async () => {
    const { sessionId, projectId, workspace } = await deletingSession();
    await writeFile(path.join(workspace, "old.txt"), "old\n");
    await writeFile(path.join(workspace, "young.txt"), "young\n");
    await run(client, sessionId, [
      { tool: "delete", args: { path: "old.txt" } },
      { tool: "delete", args: { path: "young.txt" } },
    ]);
    const entries = (await trashOf(client, projectId)).body.entries;
    const old = entries.find((entry) => entry.path === "old.txt")!;
    // Trashed 31 days ago, by its record's time (the default retention is 30 days).
    const infoPath = path.join(projectTrashRoot(env.config.workspaces.dir, workspace), "Trash", "info", `${old.id}.trashinfo`);
    const monthAgo = new Date(Date.now() - 31 * 24 * 3600 * 1000);
    await utimes(infoPath, monthAgo, monthAgo);
    // A worker's sweeper prunes at its first tick, then hourly.
    await env.startWorker();
    await waitFor(async () => (await trashOf(client, projectId)).body.entries.length === 1, 10_000, "the old entry to be pruned");
    expect((await trashOf(client, projectId)).body.entries.map((entry) => entry.path)).toEqual(["young.txt"]);
    await expect(stat(infoPath)).rejects.toThrow();
    expect(await readdir(path.join(projectTrashRoot(env.config.workspaces.dir, workspace), "Trash", "files"))).toEqual([
      entries.find((entry) => entry.path === "young.txt")!.id,
    ]);
  });

  it("F4: deleting a project removes its trash and its workspace, cancels its runs and answers 404 after; another project keeps its own", async () => {
    const doomed = await deletingSession();
    const kept = await deletingSession();
    for (const session of [doomed, kept]) {
      await writeFile(path.join(session.workspace, "gone.txt"), "bye\n");
      await run(client, session.sessionId, [{ tool: "delete", args: { path: "gone.txt" } }]);
      expect((await trashOf(client, session.projectId)).body.entries).toHaveLength(1);
    }
    const trashRoot = projectTrashRoot(env.config.workspaces.dir, doomed.workspace);
    // A run still waiting for a person is cancelled with the project.
    const waiting = await client.startRun(
      doomed.sessionId,
      script([[{ tool: "bash", args: { command: "curl -s https://example.com" } }], [{ text: "done" }]]),
    );
    await waitFor(
      async () => (await client.get(`/v1/runs/${waiting.body.id}`)).body.status === "awaiting_approval",
      20_000,
      "the run to wait for approval",
    );
    // A symlink in the workspace pointing outside is removed as a link; what it points at stays.
    const outside = path.join(env.config.workspaces.dir, "..", `outside-${Date.now()}.txt`);
    await writeFile(outside, "outside\n");
    const { symlink } = await import("node:fs/promises");
    await symlink(outside, path.join(doomed.workspace, "link"));

    const other = await env.newTenant("a tenant deleting another's project");
    expect((await other.request("DELETE", `/v1/projects/${doomed.projectId}`)).status).toBe(404);
    expect((await client.request("DELETE", `/v1/projects/${doomed.projectId}`)).status).toBe(204);
    expect((await client.get(`/v1/projects/${doomed.projectId}`)).status).toBe(404);
    expect((await trashOf(client, doomed.projectId)).status).toBe(404);
    expect((await client.request("DELETE", `/v1/projects/${doomed.projectId}`)).status).toBe(404);
    expect((await client.post("/v1/sessions", { projectId: doomed.projectId })).status).toBe(404);
    // The files go in the background, on a worker (test/e2e/project-deletion.test.ts).
    await waitFor(
      async () => (await stat(trashRoot).catch(() => null)) === null && (await stat(doomed.workspace).catch(() => null)) === null,
      20_000,
      "the project's trash and workspace to be removed",
    );
    expect(await readFile(outside, "utf8")).toBe("outside\n");
    expect((await client.waitForRun(waiting.body.id)).status).toBe("cancelled");
    // History stays readable for audit; the other project is untouched.
    expect((await client.get(`/v1/sessions/${doomed.sessionId}/messages`)).status).toBe(200);
    expect((await trashOf(client, kept.projectId)).body.entries).toHaveLength(1);
    expect((await stat(kept.workspace)).isDirectory()).toBe(true);
  });
});
