import { createHash } from "node:crypto";
import { chmod, mkdir, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";
import { projectTrashRoot } from "../../src/workspace/project-trash.js";

const { env, client } = useTestEnv({ worker: true, fullAccess: true });
const digest = (text: string) => createHash("sha256").update(text).digest("hex");

/** Runs one batch of calls in a session and answers the session, run and call results. */
async function runCalls(calls: object[], session?: { sessionId: string }) {
  const { sessionId } = session ?? (await client.newSession());
  const run = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
  expect((await client.waitForRun(run.body.id)).status).toBe("completed");
  const results = await env.query<{ name: string; status: string; error_code: string | null; text: string }>(
    "select name, status, error_code, result->0->>'text' as text from tool_calls where run_id = $1 order by call_index",
    [run.body.id],
  );
  return { sessionId, runId: run.body.id as string, results };
}

async function changesOf(sessionId: string): Promise<any[]> {
  return (await client.get(`/v1/sessions/${sessionId}/file-changes`)).body.fileChanges;
}

/** Entries of the project's own trash (SPEC F4) whose original path is `relative` in `workspace`, per their .trashinfo files. */
async function trashedCopies(workspace: string, relative: string): Promise<string[]> {
  const trashDir = path.join(projectTrashRoot(env.config.workspaces.dir, workspace), "Trash");
  const infos = await readdir(path.join(trashDir, "info")).catch(() => [] as string[]);
  const copies: string[] = [];
  for (const info of infos) {
    const text = await readFile(path.join(trashDir, "info", info), "utf8");
    if (decodeURIComponent(/^Path=(.*)$/m.exec(text)?.[1] ?? "") === path.join(workspace, relative))
      copies.push(path.join(trashDir, "files", info.replace(/\.trashinfo$/, "")));
  }
  return copies;
}

describe("file changes", () => {
  it("F1, F2, F5: write and edit record path, existence, modes, digests, stored contents and a diff for people only", async () => {
    const { sessionId, runId, results } = await runCalls([{ tool: "write", args: { path: "src/app.txt", content: "one\ntwo\n" } }]);
    const workspace = await env.workspaceOf(sessionId);
    await chmod(path.join(workspace, "src/app.txt"), 0o750);
    await runCalls([{ tool: "edit", args: { path: "src/app.txt", old_string: "two", new_string: "three" } }], { sessionId });
    expect(results[0]!.text).toBe("Created src/app.txt (8 bytes).");
    const [created, edited] = await changesOf(sessionId);
    expect(created).toMatchObject({
      path: "src/app.txt",
      existedBefore: false,
      modeBefore: null,
      sha256Before: null,
      sha256After: digest("one\ntwo\n"),
      runId,
    });
    expect(edited).toMatchObject({
      path: "src/app.txt",
      existedBefore: true,
      modeBefore: 0o750,
      modeAfter: 0o750,
      sha256Before: digest("one\ntwo\n"),
      sha256After: digest("one\nthree\n"),
    });
    // Contents are stored once per digest, recoverable.
    const blobs = await env.query<{ sha256: string; bytes: Buffer }>("select sha256, bytes from content_blobs order by sha256");
    expect(blobs.find((b) => b.sha256 === digest("one\nthree\n"))!.bytes.toString()).toBe("one\nthree\n");
    expect(blobs.filter((b) => b.sha256 === digest("one\ntwo\n"))).toHaveLength(1);
    // The diff goes to people (GET and tool_end), never into the model's history.
    const detail = (await client.get(`/v1/file-changes/${edited.id}`)).body;
    expect(detail.diff).toContain("-two\n+three");
    const toolEnds = (await client.events(sessionId)).filter((e) => e.type === "tool_end");
    expect(toolEnds[1].data.fileChanges).toEqual([
      { id: edited.id, path: "src/app.txt", existedBefore: true, sha256Before: edited.sha256Before, sha256After: edited.sha256After },
    ]);
    expect(toolEnds[1].data.diff).toContain("+three");
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    for (const message of messages.filter((m) => m.role === "tool")) expect(JSON.stringify(message.content)).not.toContain("+three");
  });

  it("edit refuses an ambiguous match unless asked to replace all, and keeps CRLF line endings", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    await writeFile(path.join(workspace, "crlf.txt"), "a = 1\r\nb = 1\r\n");
    const { results } = await runCalls(
      [
        { tool: "edit", args: { path: "crlf.txt", old_string: "= 1", new_string: "= 2" } },
        { tool: "edit", args: { path: "crlf.txt", old_string: "a = 1\nb", new_string: "a = 3\nb" } },
        { tool: "edit", args: { path: "crlf.txt", old_string: "= 1", new_string: "= 2", replace_all: true } },
        { tool: "edit", args: { path: "crlf.txt", old_string: "missing", new_string: "x" } },
        { tool: "edit", args: { path: "nope.txt", old_string: "a", new_string: "b" } },
      ],
      { sessionId },
    );
    expect(results.map((r) => r.error_code)).toEqual(["ambiguous_match", null, null, "no_match", "file_not_found"]);
    expect(await readFile(path.join(workspace, "crlf.txt"), "utf8")).toBe("a = 3\r\nb = 2\r\n");
  });

  it("F3: revert one change restores content and mode; a created file goes to the trash", async () => {
    const { sessionId } = await runCalls([{ tool: "write", args: { path: "a.txt", content: "first\n" } }]);
    const workspace = await env.workspaceOf(sessionId);
    await chmod(path.join(workspace, "a.txt"), 0o700);
    await runCalls(
      [
        { tool: "write", args: { path: "a.txt", content: "second\n" } },
        { tool: "write", args: { path: "b.txt", content: "new\n" } },
      ],
      { sessionId },
    );
    const [, overwrite, creation] = await changesOf(sessionId);
    await chmod(path.join(workspace, "a.txt"), 0o700);
    expect((await client.post(`/v1/file-changes/${overwrite.id}/revert`)).status).toBe(200);
    expect(await readFile(path.join(workspace, "a.txt"), "utf8")).toBe("first\n");
    expect((await stat(path.join(workspace, "a.txt"))).mode & 0o777).toBe(0o700);
    expect((await client.post(`/v1/file-changes/${creation.id}/revert`)).status).toBe(200);
    await expect(stat(path.join(workspace, "b.txt"))).rejects.toThrow();
    const copies = await trashedCopies(workspace, "b.txt");
    expect(copies).toHaveLength(1);
    expect(await readFile(copies[0]!, "utf8")).toBe("new\n");
    const again = await client.post(`/v1/file-changes/${creation.id}/revert`);
    expect(again.status).toBe(409);
  });

  it("F3: revert every change after a point, newest first; a file changed since refuses it with 409 and nothing is touched", async () => {
    const { sessionId } = await runCalls([{ tool: "write", args: { path: "c.txt", content: "v1\n" } }]);
    await runCalls([{ tool: "write", args: { path: "c.txt", content: "v2\n" } }], { sessionId });
    await runCalls(
      [
        { tool: "write", args: { path: "c.txt", content: "v3\n" } },
        { tool: "write", args: { path: "d.txt", content: "d\n" } },
      ],
      { sessionId },
    );
    const workspace = await env.workspaceOf(sessionId);
    const [, second] = await changesOf(sessionId);

    await writeFile(path.join(workspace, "c.txt"), "edited by a person\n");
    const conflict = await client.post(`/v1/file-changes/${second.id}/revert`, { andLater: true });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.message).toMatch(/c\.txt changed since/);
    expect(await readFile(path.join(workspace, "d.txt"), "utf8")).toBe("d\n");
    expect(await readFile(path.join(workspace, "c.txt"), "utf8")).toBe("edited by a person\n");

    await writeFile(path.join(workspace, "c.txt"), "v3\n");
    const reverted = await client.post(`/v1/file-changes/${second.id}/revert`, { andLater: true });
    expect(reverted.status).toBe(200);
    expect(reverted.body.reverted).toHaveLength(3);
    expect(await readFile(path.join(workspace, "c.txt"), "utf8")).toBe("v1\n");
    await expect(stat(path.join(workspace, "d.txt"))).rejects.toThrow();
    expect((await changesOf(sessionId)).map((c) => c.revertedAt !== null)).toEqual([false, true, true, true]);
  });

  it("F4: delete moves to the trash and never deletes for good; refused paths per mode; a revert brings files back", async () => {
    const outside = path.join(tmpdir(), `foya-outside-${Date.now()}.txt`);
    await writeFile(outside, "outside\n");
    const prepare = async (workspace: string) => {
      await mkdir(path.join(workspace, ".git"), { recursive: true });
      await writeFile(path.join(workspace, ".git", "config"), "[core]\n");
      await mkdir(path.join(workspace, "docs", "deep"), { recursive: true });
      await writeFile(path.join(workspace, "docs", "a.md"), "A\n");
      await writeFile(path.join(workspace, "docs", "deep", "b.md"), "B\n");
      await symlink(path.dirname(outside), path.join(workspace, "escape"));
    };
    const cases: Array<[string, string]> = [
      ["../x", "path_outside_workspace"],
      [outside, "path_outside_workspace"],
      [`escape/${path.basename(outside)}`, "path_outside_workspace"],
      [".", "protected_path"],
      [".git", "protected_path"],
      [".git/config", "protected_path"],
      [".foya", "protected_path"],
      ["/", "path_outside_workspace"],
      ["missing.txt", "file_not_found"],
    ];
    for (const mode of ["manual", "auto"]) {
      const session = await client.newSession({ approvalMode: mode });
      // The gateway would ask for these; a rule lets them through, so the tool's own refusals are what is tested (S1).
      await client.request("PUT", `/v1/projects/${session.projectId}/policy`, { rules: { allow: ["delete"] } });
      await prepare(await env.workspaceOf(session.sessionId));
      const { results } = await runCalls(
        cases.map(([p]) => ({ tool: "delete", args: { path: p } })),
        session,
      );
      expect(
        results.map((r) => r.error_code),
        mode,
      ).toEqual(cases.map(([, code]) => code));
    }
    expect(await readFile(outside, "utf8")).toBe("outside\n");

    // Full Access may delete the protected folders, still into the trash; but the workspace door keeps
    // every tool inside the workspace in every mode (S6), and git's config and hooks stay protected (S11).
    const full = await client.newSession({ approvalMode: "full_access" });
    const fullWorkspace = await env.workspaceOf(full.sessionId);
    await prepare(fullWorkspace);
    await mkdir(path.join(fullWorkspace, ".agents"), { recursive: true });
    await writeFile(path.join(fullWorkspace, ".agents", "notes.md"), "notes\n");
    const { results: fullResults } = await runCalls(
      [
        { tool: "delete", args: { path: ".agents/notes.md" } },
        { tool: "delete", args: { path: ".git/config" } },
        { tool: "delete", args: { path: outside } },
        { tool: "delete", args: { path: `escape/${path.basename(outside)}` } },
        { tool: "delete", args: { path: "/" } },
        { tool: "delete", args: { path: "." } },
      ],
      full,
    );
    expect(fullResults.map((r) => r.error_code)).toEqual([
      null,
      "protected_path",
      "path_outside_workspace",
      "path_outside_workspace",
      "path_outside_workspace",
      "protected_path",
    ]);
    expect(await trashedCopies(fullWorkspace, ".agents/notes.md")).toHaveLength(1);
    expect(await readFile(path.join(fullWorkspace, ".git", "config"), "utf8")).toBe("[core]\n");
    expect(await readFile(outside, "utf8")).toBe("outside\n");

    // A folder: every file recorded, the folder trashed, and a revert restores the files.
    const { sessionId, results } = await runCalls([{ tool: "delete", args: { path: "docs" } }], full);
    expect(results[0]!.text).toBe("Moved folder docs (2 files) to the trash.");
    await expect(stat(path.join(fullWorkspace, "docs"))).rejects.toThrow();
    expect(await trashedCopies(fullWorkspace, "docs")).toHaveLength(1);
    const changes = (await changesOf(sessionId)).filter((c) => c.path.startsWith("docs"));
    expect(changes.map((c) => [c.path, c.existedBefore, c.sha256After]).sort()).toEqual([
      [path.join("docs", "a.md"), true, null],
      [path.join("docs", "deep", "b.md"), true, null],
    ]);
    for (const change of changes) expect((await client.post(`/v1/file-changes/${change.id}/revert`)).status).toBe(200);
    expect(await readFile(path.join(fullWorkspace, "docs", "deep", "b.md"), "utf8")).toBe("B\n");
  });

  it("F1, F3: a file too large to keep is recorded by its digest only: deleting or replacing it works, its bytes never reach Postgres, and its revert is refused clearly", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const big = Buffer.alloc(70 * 1024 * 1024, "b");
    await writeFile(path.join(workspace, "big.bin"), big);
    await writeFile(path.join(workspace, "replaced.bin"), big);
    const [before] = await env.query<{ bytes: string }>("select coalesce(sum(octet_length(bytes)), 0)::text as bytes from content_blobs");
    const { results } = await runCalls(
      [
        { tool: "delete", args: { path: "big.bin" } },
        { tool: "write", args: { path: "replaced.bin", content: "small now\n" } },
      ],
      { sessionId },
    );
    expect(results.map((r) => r.status)).toEqual(["succeeded", "succeeded"]);
    expect(results[0]!.text).toContain("too large to keep a copy of");
    expect(results[1]!.text).toContain("too large to keep: this change cannot be reverted");
    const [after] = await env.query<{ bytes: string }>("select coalesce(sum(octet_length(bytes)), 0)::text as bytes from content_blobs");
    expect(Number(after!.bytes) - Number(before!.bytes)).toBeLessThan(1024 * 1024);
    const changes = await changesOf(sessionId);
    const deletion = changes.find((c) => c.path === "big.bin");
    expect(deletion).toMatchObject({
      existedBefore: true,
      sha256Before: createHash("sha256").update(big).digest("hex"),
      sha256After: null,
    });
    for (const change of changes) {
      const reverted = await client.post(`/v1/file-changes/${change.id}/revert`);
      expect(reverted.status).toBe(409);
      expect(reverted.body.error.message).toContain("too large to keep");
    }
    await expect(stat(path.join(workspace, "big.bin"))).rejects.toThrow();
    expect(await readFile(path.join(workspace, "replaced.bin"), "utf8")).toBe("small now\n");
  });

  it("D11: six racing reverts of one change: exactly one reverts, the others answer 409 with the change's state", async () => {
    const { sessionId } = await runCalls([{ tool: "write", args: { path: "raced.txt", content: "one\n" } }]);
    await runCalls([{ tool: "write", args: { path: "raced.txt", content: "two\n" } }], { sessionId });
    const [, second] = await changesOf(sessionId);
    const answers = await Promise.all(Array.from({ length: 6 }, () => client.post(`/v1/file-changes/${second.id}/revert`)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    for (const answer of answers.filter((a) => a.status === 409)) {
      expect(answer.body.error.message).toMatch(/already reverted at/);
      expect(answer.body.error.current).toMatchObject({ id: second.id, revertedAt: expect.any(String) });
    }
    const workspace = await env.workspaceOf(sessionId);
    expect(await readFile(path.join(workspace, "raced.txt"), "utf8")).toBe("one\n");
    expect((await changesOf(sessionId)).map((c) => c.revertedAt !== null)).toEqual([false, true]);
  });

  it("D8: another tenant's file changes answer 404", async () => {
    const { sessionId } = await runCalls([{ tool: "write", args: { path: "mine.txt", content: "x" } }]);
    const [change] = await changesOf(sessionId);
    const stranger = await env.newTenant("stranger");
    expect((await stranger.get(`/v1/file-changes/${change.id}`)).status).toBe(404);
    expect((await stranger.post(`/v1/file-changes/${change.id}/revert`)).status).toBe(404);
    expect((await stranger.get(`/v1/sessions/${sessionId}/file-changes`)).status).toBe(404);
  });
});
