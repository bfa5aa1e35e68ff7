import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { lstat, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { script, waitFor } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";

// Full Access records shell changes here too, so the destructive forms F4 refuses elsewhere can run (SPEC X7).
const { env, client } = useTestEnv({ worker: true, fullAccess: true, overrides: { FOYA_RECORD_FULL_ACCESS_SHELL: "true" } });
const digest = (text: string) => createHash("sha256").update(text).digest("hex");

/** Runs one batch; a call the gateway asks about is approved, as a person who lets it run would (the session's policy). */
async function runCalls(sessionId: string, calls: object[]) {
  const run = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
  const runId = run.body.id as string;
  await waitFor(
    async () => {
      const status = (await client.get(`/v1/runs/${runId}`)).body.status as string;
      if (status !== "awaiting_approval") return ["completed", "failed", "cancelled"].includes(status);
      for (const approval of (await client.get(`/v1/approvals?status=pending&runId=${runId}`)).body.approvals) {
        await client.post(`/v1/approvals/${approval.id}`, { decision: "approve", reason: "the session lets it run" });
      }
      return false;
    },
    30_000,
    "run end",
  );
  expect((await client.waitForRun(runId)).status).toBe("completed");
  return env.query<{ name: string; status: string; error_code: string | null; text: string }>(
    "select name, status, error_code, result->0->>'text' as text from tool_calls where run_id = $1 order by call_index",
    [runId],
  );
}
const bash = (command: string) => ({ tool: "bash", args: { command } });
async function changesOf(sessionId: string): Promise<any[]> {
  return (await client.get(`/v1/sessions/${sessionId}/file-changes`)).body.fileChanges;
}

describe("shell file changes", () => {
  it("X7: a bash call that creates, modifies, deletes and chmods files produces the matching records; revert of each restores content and mode", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await runCalls(sessionId, [
      bash("printf 'old\\n' > keep.txt; printf 'bye\\n' > gone.txt; printf '#!/bin/sh\\n' > mode.sh; chmod 644 mode.sh"),
    ]);
    const seeded = await changesOf(sessionId);
    expect(seeded.map((c) => c.path).sort()).toEqual(["gone.txt", "keep.txt", "mode.sh"]);

    const [result] = await runCalls(sessionId, [
      bash(
        "echo new > made.txt && echo more >> keep.txt && mv gone.txt /tmp/gone && chmod 755 mode.sh && mkdir -p deep/er && echo x > deep/er/f.txt",
      ),
    ]);
    expect(result!.status).toBe("succeeded");
    const changes = (await changesOf(sessionId)).slice(seeded.length);
    const byPath = Object.fromEntries(changes.map((c) => [c.path, c]));
    expect(Object.keys(byPath).sort()).toEqual(["deep/er/f.txt", "gone.txt", "keep.txt", "made.txt", "mode.sh"]);
    expect(byPath["made.txt"]).toMatchObject({ existedBefore: false, sha256Before: null, sha256After: digest("new\n") });
    expect(byPath["keep.txt"]).toMatchObject({ existedBefore: true, sha256Before: digest("old\n"), sha256After: digest("old\nmore\n") });
    expect(byPath["gone.txt"]).toMatchObject({ existedBefore: true, sha256Before: digest("bye\n"), sha256After: null, modeAfter: null });
    expect(byPath["mode.sh"]).toMatchObject({
      modeBefore: 0o644,
      modeAfter: 0o755,
      sha256Before: digest("#!/bin/sh\n"),
      sha256After: digest("#!/bin/sh\n"),
    });
    expect(byPath["deep/er/f.txt"]).toMatchObject({ existedBefore: false, sha256After: digest("x\n") });
    const detail = (await client.get(`/v1/file-changes/${byPath["keep.txt"].id}`)).body;
    expect(detail.diff).toContain("+more");
    // They are the call's: linked to it and announced in its tool_end.
    const toolEnds = (await client.events(sessionId)).filter((e) => e.type === "tool_end");
    expect(
      toolEnds
        .at(-1)
        .data.fileChanges.map((c: { id: string }) => c.id)
        .sort(),
    ).toEqual(changes.map((c) => c.id).sort());
    // The workspace has the command's result.
    expect(await readFile(path.join(workspace, "keep.txt"), "utf8")).toBe("old\nmore\n");
    await expect(stat(path.join(workspace, "gone.txt"))).rejects.toThrow();

    for (const p of ["gone.txt", "mode.sh", "keep.txt", "made.txt"]) {
      const reverted = await client.post(`/v1/file-changes/${byPath[p].id}/revert`);
      expect(reverted.status, p).toBe(200);
    }
    expect(await readFile(path.join(workspace, "gone.txt"), "utf8")).toBe("bye\n");
    expect((await stat(path.join(workspace, "mode.sh"))).mode & 0o777).toBe(0o644);
    expect(await readFile(path.join(workspace, "keep.txt"), "utf8")).toBe("old\n");
    await expect(stat(path.join(workspace, "made.txt"))).rejects.toThrow();
  });

  it("X7: andLater reverts across bash and write changes in order; a file changed since answers 409", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await runCalls(sessionId, [{ tool: "write", args: { path: "a.txt", content: "v1\n" } }]);
    await runCalls(sessionId, [bash("echo v2 > a.txt && echo b1 > b.txt")]);
    await runCalls(sessionId, [{ tool: "write", args: { path: "a.txt", content: "v3\n" } }]);
    await runCalls(sessionId, [bash("sed -i s/v3/v4/ a.txt && echo b2 >> b.txt")]);
    expect(await readFile(path.join(workspace, "a.txt"), "utf8")).toBe("v4\n");
    const changes = await changesOf(sessionId);
    const firstBash = changes.find((c) => c.path === "a.txt" && c.sha256After === digest("v2\n"));
    expect(firstBash).toBeDefined();

    await writeFile(path.join(workspace, "b.txt"), "a person's edit\n");
    const conflict = await client.post(`/v1/file-changes/${firstBash.id}/revert`, { andLater: true });
    expect(conflict.status).toBe(409);
    expect(await readFile(path.join(workspace, "a.txt"), "utf8")).toBe("v4\n");

    await writeFile(path.join(workspace, "b.txt"), "b1\nb2\n");
    const reverted = await client.post(`/v1/file-changes/${firstBash.id}/revert`, { andLater: true });
    expect(reverted.status).toBe(200);
    expect(await readFile(path.join(workspace, "a.txt"), "utf8")).toBe("v1\n");
    await expect(stat(path.join(workspace, "b.txt"))).rejects.toThrow();
  });

  /** Every entry of a workspace but .git: kind, mode and content digest, to compare trees byte for byte. */
  async function treeOf(root: string, inner = ""): Promise<Record<string, string>> {
    const tree: Record<string, string> = {};
    for (const name of (await readdir(path.join(root, inner))).sort()) {
      if (name === ".git") continue;
      const at = inner ? `${inner}/${name}` : name;
      const stats = await lstat(path.join(root, at));
      if (stats.isDirectory()) Object.assign(tree, await treeOf(root, at));
      else
        tree[at] =
          `${(stats.mode & 0o7777).toString(8)} ${stats.isFile() ? digest((await readFile(path.join(root, at))).toString("latin1")) : "other"}`;
    }
    return tree;
  }

  const git = "git -c user.email=t@example.com -c user.name=t";
  const setupRepo = `${git} init -q . && printf 'v1\\n' > f.txt && mkdir -p sub && printf 's1\\n' > sub/s.txt && ${git} add -A && ${git} commit -qm one && printf 'work\\n' > f.txt && printf 'more\\n' >> sub/s.txt`;
  const destructiveForms: Array<{ form: string; setup: string; command: string }> = [
    { form: "git reset --hard", setup: setupRepo, command: `${git} reset -q --hard` },
    { form: "git checkout -- .", setup: setupRepo, command: `${git} checkout -- .` },
    { form: ": > f", setup: "printf 'precious\\n' > f", command: ": > f" },
    { form: "cp /dev/null f", setup: "printf 'precious\\n' > f", command: "cp /dev/null f" },
    { form: "truncate -s 0 f", setup: "head -c 100000 /dev/urandom > f", command: "truncate -s 0 f" },
    {
      form: "rsync --delete",
      setup: "mkdir -p src dst/deep && echo a > src/a && echo old > dst/old && echo deep > dst/deep/x",
      command: "rsync -a --delete src/ dst/",
    },
    {
      form: "tar --remove-files",
      setup: "mkdir -p d/e && echo 1 > d/one && echo 2 > d/e/two",
      command: "tar --remove-files -cf archive.tar d",
    },
    {
      form: "bash s.sh containing rm",
      setup: "echo keep > k1 && mkdir -p tree && echo t > tree/t && printf 'rm -f k1\\nrm -rf tree\\n' > s.sh",
      command: "bash s.sh",
    },
    { form: "python3 os.remove", setup: "echo py > victim.txt", command: `/usr/bin/python3 -c 'import os; os.remove("victim.txt")'` },
  ];

  it("X7: every destructive form of the corpus is undone byte for byte through the revert API", async () => {
    for (const { form, setup, command } of destructiveForms) {
      const { sessionId } = await client.newSession({ approvalMode: "full_access" });
      const workspace = await env.workspaceOf(sessionId);
      const [prepared] = await runCalls(sessionId, [bash(setup)]);
      expect(prepared!.status, `${form}: setup ${prepared!.text}`).toBe("succeeded");
      const before = await treeOf(workspace);
      const known = (await changesOf(sessionId)).length;
      const [destroyed] = await runCalls(sessionId, [bash(command)]);
      expect(destroyed!.status, `${form}: ${destroyed!.text}`).toBe("succeeded");
      expect(await treeOf(workspace), form).not.toEqual(before);
      const changes = (await changesOf(sessionId)).slice(known);
      expect(changes.length, form).toBeGreaterThan(0);
      const reverted = await client.post(`/v1/file-changes/${changes[0].id}/revert`, { andLater: true });
      expect(reverted.status, `${form}: ${JSON.stringify(reverted.body)}`).toBe(200);
      expect(await treeOf(workspace), form).toEqual(before);
    }
  });

  it("X7: a file another session of the project changed while a command ran keeps that newer content; the command's version is a file change marked not applied, whose revert has nothing to undo", async () => {
    const { sessionId, projectId } = await client.newSession({ approvalMode: "full_access" });
    const other = (await client.post<{ id: string }>("/v1/sessions", { projectId, approvalMode: "full_access" })).body.id;
    const workspace = await env.workspaceOf(sessionId);
    await runCalls(sessionId, [bash("echo base > shared.txt")]);
    const layered = client.startRun(
      sessionId,
      script([[bash("echo command >> shared.txt; echo own > own.txt; sleep 2; echo command-end >> shared.txt")], [{ text: "done" }]]),
    );
    const runId = (await layered).body.id as string;
    // The command has copied the file up into its layer; then the other session writes it, confirmed.
    const layers = path.join(env.config.workspaces.dir, ".calls");
    await waitFor(
      async () => {
        for (const name of await readdir(layers).catch(() => [] as string[]))
          if ((await readFile(path.join(layers, name, "upper", "shared.txt"), "utf8").catch(() => "")).includes("command")) return true;
        return false;
      },
      20_000,
      "the command's write in its layer",
    );
    await runCalls(other, [{ tool: "write", args: { path: "shared.txt", content: "other session\n" } }]);
    expect((await client.waitForRun(runId)).status).toBe("completed");

    expect(await readFile(path.join(workspace, "shared.txt"), "utf8")).toBe("other session\n");
    expect(await readFile(path.join(workspace, "own.txt"), "utf8")).toBe("own\n");
    const [call] = await env.query<{ text: string }>("select result->0->>'text' as text from tool_calls where run_id = $1", [runId]);
    expect(call!.text).toContain("not applied, because the workspace changed there since this command made its version");
    const records = (await changesOf(sessionId)).filter((change) => change.runId === runId);
    const shared = records.find((change) => change.path === "shared.txt");
    expect(shared).toMatchObject({
      notApplied: "changed_since",
      sha256Before: digest("other session\n"),
      sha256After: digest("base\ncommand\ncommand-end\n"),
    });
    expect(records.find((change) => change.path === "own.txt")).toMatchObject({ notApplied: null });
    const events = await env.query<{ data: any }>("select data from events where run_id = $1 and type = 'tool_end'", [runId]);
    expect(events[0]!.data.fileChanges).toContainEqual(expect.objectContaining({ path: "shared.txt", notApplied: "changed_since" }));

    // Its revert has nothing to undo: the newer content stays, and the change is marked reverted.
    const reverted = await client.post(`/v1/file-changes/${shared.id}/revert`, {});
    expect(reverted.status).toBe(200);
    expect(await readFile(path.join(workspace, "shared.txt"), "utf8")).toBe("other session\n");
  });

  it("X7: a call whose files have names that are not UTF-8 (an archive of Latin-1 names) and a tree deeper than PATH_MAX is applied at once; its other changes are recorded", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "full_access" });
    const workspace = await env.workspaceOf(sessionId);
    const command = `/usr/bin/python3 -c "import os
open(b'caf\\xe9.txt', 'wb').write(b'latin-1 name')
for i in range(120):
    os.mkdir('n' * 60)
    os.chdir('n' * 60)
open('deep.txt', 'w').write('bottom')" && echo plain > plain.txt`;
    const [call] = await runCalls(sessionId, [bash(command)]);
    expect(call!.status, call!.text).toBe("succeeded");
    expect(call!.text).toContain("names that are not valid UTF-8");
    expect(
      readFileSync(Buffer.concat([Buffer.from(`${workspace}/`), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74])]), "utf8"),
    ).toBe("latin-1 name");
    expect(await readFile(path.join(workspace, "plain.txt"), "utf8")).toBe("plain\n");
    const bottom = execFileSync("bash", [
      "-c",
      `cd ${workspace} && cd ${"n".repeat(60)} && for i in $(seq 119); do cd ${"n".repeat(60)}; done && cat deep.txt`,
    ]);
    expect(bottom.toString()).toBe("bottom");
    const paths = (await changesOf(sessionId)).map((change) => change.path);
    expect(paths).toContain("plain.txt");
    expect(paths).toContain(`${Array.from({ length: 120 }, () => "n".repeat(60)).join("/")}/deep.txt`);
    // Nothing is left for a later worker to trip over.
    expect(await readdir(path.join(env.config.workspaces.dir, ".calls")).catch(() => [])).toEqual([]);
  });

  it("X7: a background command's changes are summarized in its record when it ends, never per file, and its start does not wait for them", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await runCalls(sessionId, [bash("echo one > old.txt && echo two > edited.txt")]);
    const known = (await changesOf(sessionId)).length;
    const [started] = await runCalls(sessionId, [
      {
        tool: "bash",
        args: { command: "sleep 2 && echo made > bg-new.txt && echo more >> edited.txt && mv old.txt /tmp/old", background: true },
      },
    ]);
    const id = /Started background command (cmd_\S+)\./.exec(started!.text)?.[1];
    expect(id, started!.text).toBeDefined();
    // The tool answered while the command still ran: the file it makes later is not there yet.
    await expect(stat(path.join(workspace, "bg-new.txt"))).rejects.toThrow();
    const ended = await waitFor(
      async () => {
        const command = (await client.get(`/v1/commands/${id}`)).body;
        return command.status !== "running" && command;
      },
      30_000,
      "the background command to end",
    );
    expect(ended.status).toBe("exited");
    expect(ended.output).toMatch(
      /files changed in the workspace while this background command ran: created 1 \(bg-new\.txt\); modified 1 \(edited\.txt\); deleted 1 \(old\.txt\)/,
    );
    expect(ended.output).toMatch(/summarized, not recorded as file changes/);
    expect((await changesOf(sessionId)).length).toBe(known);
  });
});
