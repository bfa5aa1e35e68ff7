import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";
import { foya, jsonLines, spawnFoya, type CliEnv } from "./foya-cli.js";

let env: TestEnv;
let tenant: ApiClient;
let url: string;
let configDirs: string;
/** The tenant's URL and key in the environment, and a configuration folder of the test's own. */
let cli: CliEnv;

beforeAll(async () => {
  env = await createTestEnv();
  await env.startWorker();
  url = (await env.startServer()).url;
  tenant = await env.newTenant();
  configDirs = await mkdtemp(path.join(tmpdir(), "foya-cli-"));
  cli = { FOYA_URL: url, FOYA_API_KEY: tenant.key, FOYA_CONFIG_DIR: path.join(configDirs, "env") };
});
afterAll(async () => {
  await env?.close();
  if (configDirs) await rm(configDirs, { recursive: true, force: true });
});

/** A session made by `foya session new --json`. */
async function newSession(mode: "auto" | "manual" = "auto"): Promise<string> {
  const created = await foya(cli, "session", "new", "--mode", mode, "--json");
  expect(created, created.stderr).toMatchObject({ exitCode: 0 });
  const session = JSON.parse(created.stdout) as { id: string; approvalMode: string };
  expect(session.approvalMode).toBe(mode);
  return session.id;
}

describe("foya, the CLI", () => {
  it("E2: run --follow against the service prints the streamed text and tool calls and exits 0", async () => {
    const sessionId = await newSession();
    const input = script([
      [{ tool: "write", args: { path: "notes.md", content: "from the cli\n" } }],
      [{ text: "The note ", chunks: 1 }, { text: "is written." }],
    ]);
    const followed = await foya(cli, "run", input, "--session", sessionId, "--follow");

    expect(followed.exitCode, followed.stderr).toBe(0);
    const lines = followed.stdout.split("\n");
    const started = lines.indexOf("▸ write");
    const ended = lines.findIndex((line) => line.startsWith("✓ write"));
    const text = lines.indexOf("The note is written.");
    expect(
      [started, ended, text].every((index) => index >= 0),
      followed.stdout,
    ).toBe(true);
    expect(started).toBeLessThan(ended);
    expect(ended).toBeLessThan(text);
    // The change the call made, with the command that shows it.
    expect(followed.stdout).toMatch(/^ {2}notes\.md {2}foya diff fch_\S+$/m);
    expect(lines.at(-2)).toBe("✓ run completed");
    expect(followed.stderr).toMatch(/^run run_\S+ in session ses_\S+$/m);
    // Not a terminal: no colours and no transient progress lines.
    expect(followed.stdout).not.toContain("\x1b");
    expect(followed.stdout).not.toContain("\r");
    expect(await readFile(path.join(await env.workspaceOf(sessionId), "notes.md"), "utf8")).toBe("from the cli\n");

    // --json: the run's events, one per line, ending with its run_end.
    const asJson = await foya(cli, "run", script([[{ text: "again" }]]), "--session", sessionId, "--follow", "--json");
    expect(asJson.exitCode).toBe(0);
    const events = jsonLines(asJson.stdout) as Array<{ type: string; runId: string; data: Record<string, unknown> }>;
    expect(events[0]?.type).toBe("run_start");
    expect(events.at(-1)).toMatchObject({ type: "run_end", data: { status: "completed" } });
    expect(new Set(events.map((event) => event.runId)).size).toBe(1);

    // A run that fails ends the command with 3.
    const failing = await foya(cli, "run", script([[{ fail: "model exploded" }]]), "--session", sessionId, "--follow");
    expect(failing.exitCode, failing.stdout + failing.stderr).toBe(3);
    expect(failing.stdout).toMatch(/^✗ run failed: .*model exploded/m);
  });

  it("E2: approve from the CLI unblocks a run", async () => {
    const sessionId = await newSession("manual");
    const input = script([[{ tool: "write", args: { path: "approved.md", content: "yes\n" } }], [{ text: "done after approval" }]]);
    const follower = spawnFoya(cli, "run", input, "--session", sessionId, "--follow");
    try {
      const [, approvalId] = await follower.waitForOutput(/foya approve (apr_\S+)/, 30_000);
      expect(follower.output()).toMatch(/\? write needs approval: /);

      const listed = await foya(cli, "approvals", "--session", sessionId, "--json");
      expect(listed.exitCode, listed.stderr).toBe(0);
      const approvals = JSON.parse(listed.stdout) as Array<{ id: string; status: string; call: { tool: string } }>;
      expect(approvals).toEqual([
        expect.objectContaining({ id: approvalId, status: "pending", call: expect.objectContaining({ tool: "write" }) }),
      ]);

      const approved = await foya(cli, "approve", approvalId!, "--reason", "fine by me");
      expect(approved, approved.stderr).toMatchObject({ exitCode: 0, stdout: `approved ${approvalId} (write)\n` });

      expect(await follower.exited).toMatchObject({ code: 0 });
      expect(follower.output()).toMatch(/approval apr_\S+ approved: fine by me/);
      expect(follower.output()).toContain("done after approval");
      expect(follower.output()).toContain("✓ run completed");
      expect(await readFile(path.join(await env.workspaceOf(sessionId), "approved.md"), "utf8")).toBe("yes\n");

      // The first decision stands: a second is the API's 409, exit 1, the message on stderr.
      const again = await foya(cli, "deny", approvalId!);
      expect(again.exitCode).toBe(1);
      expect(again.stdout).toBe("");
      expect(again.stderr).toMatch(/HTTP 409/);
      expect(JSON.parse((await foya(cli, "approvals", "--session", sessionId, "--json")).stdout)).toEqual([]);
    } finally {
      follower.kill("SIGKILL");
    }
  });

  it("E2: --json output parses for every command, and exit codes say what failed (unknown id → 4, bad usage → 2)", async () => {
    const sessionId = await newSession();
    const writes = ["v1\n", "v2\n"].map((content) => ({ tool: "write", args: { path: "draft.txt", content } }));
    const started = await foya(cli, "run", script([writes, [{ text: "two versions" }]]), "--session", sessionId, "--json");
    expect(started.exitCode, started.stderr).toBe(0);
    const run = JSON.parse(started.stdout) as { id: string; sessionId: string };
    expect(run).toMatchObject({ id: expect.stringMatching(/^run_/), sessionId });
    expect((await tenant.waitForRun(run.id)).status).toBe("completed");

    const session = JSON.parse((await foya(cli, "session", "show", sessionId, "--json")).stdout) as { id: string; lastEventSeq: number };
    expect(session).toMatchObject({ id: sessionId, lastEventSeq: expect.any(Number) });

    const changes = JSON.parse((await foya(cli, "changes", sessionId, "--json")).stdout) as Array<{ id: string; path: string }>;
    expect(changes.map((change) => change.path)).toEqual(["draft.txt", "draft.txt"]);
    const [first, second] = changes;
    const diff = JSON.parse((await foya(cli, "diff", second!.id, "--json")).stdout) as { id: string; diff: string };
    expect(diff.diff).toMatch(/-v1\n\+v2/);
    expect((await foya(cli, "diff", second!.id)).stdout).toMatch(/^-v1\n\+v2$/m);
    expect((await foya(cli, "changes", sessionId)).stdout).toMatch(new RegExp(`^${first!.id} {2}A draft\\.txt`, "m"));

    const events = jsonLines((await foya(cli, "events", sessionId, "--json")).stdout) as Array<{ seq: number; type: string }>;
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)?.type).toBe("run_end");
    const later = jsonLines((await foya(cli, "events", sessionId, "--after", String(events.length - 2), "--json")).stdout);
    expect(later).toEqual(events.slice(-2));
    expect((await foya(cli, "events", sessionId)).stdout.trimEnd().split("\n").at(-1)).toMatch(
      /^\s+\d+ \d\d:\d\d:\d\d run_end\s+completed$/,
    );

    const reverted = JSON.parse((await foya(cli, "revert", first!.id, "--and-later", "--json")).stdout) as Array<{ id: string }>;
    expect(reverted.map((change) => change.id).sort()).toEqual([first!.id, second!.id].sort());
    expect(JSON.parse((await foya(cli, "approvals", "--status", "all", "--session", sessionId, "--json")).stdout)).toEqual([]);

    // A second revert is refused by the API: 1, and with --json the error is a JSON document on stderr.
    const refused = await foya(cli, "revert", first!.id, "--json");
    expect(refused).toMatchObject({ exitCode: 1, stdout: "" });
    expect(JSON.parse(refused.stderr)).toMatchObject({ error: { status: 409, code: expect.any(String), message: expect.any(String) } });

    // Unknown ids: 4.
    const unknown = [
      ["diff", "fch_doesnotexist"],
      ["session", "show", "ses_doesnotexist"],
      ["approve", "apr_doesnotexist"],
      ["events", "ses_doesnotexist"],
    ];
    const missing = await Promise.all(unknown.map((args) => foya(cli, ...args, "--json")));
    for (const [index, result] of missing.entries()) {
      expect(result.exitCode, unknown[index]!.join(" ")).toBe(4);
      expect(JSON.parse(result.stderr)).toMatchObject({ error: { code: "not_found", status: 404 } });
    }

    // Bad usage: 2, before any request.
    const usage = [
      ["bogus"],
      ["session"],
      ["revert"],
      ["diff", "a", "b"],
      ["events", sessionId, "--after", "soon"],
      ["run", "hi", "--if-active", "maybe"],
      ["approve", "apr_x", "--arguments", "[1]"],
      ["changes", sessionId, "--nope"],
    ];
    const wrong = await Promise.all(usage.map((args) => foya(cli, ...args)));
    for (const [index, result] of wrong.entries()) {
      expect(result.exitCode, usage[index]!.join(" ")).toBe(2);
      expect(result.stderr).toMatch(/^foya: .+\nSee `foya .*--help`\.\n$/);
    }
    const help = await foya(cli, "revert", "--help");
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain("--and-later");
    expect((await foya(cli, "--help")).stdout).toMatch(/Exit codes: 0 ok/);
  });

  it("E2, W2: fork prints the new session and the calls not undone; rewind to a user message sets its run aside as a branch that branches lists and rewind --branch brings back", async () => {
    const sessionId = await newSession();
    const steps = [
      [{ tool: "write", args: { path: "a.txt", content: "one\n" } }],
      [{ tool: "bash", args: { command: "sleep 0.2", background: true } }],
      [{ text: "done" }],
    ];
    const started = await tenant.startRun(sessionId, script(steps));
    const run = await tenant.waitForRun(started.body.id);
    expect(run.status).toBe("completed");

    // After step 0: the background command of step 1 is listed, its effects outside the files.
    const forked = await foya(cli, "fork", sessionId, "--run", run.id, "--step", "0");
    expect(forked.exitCode, forked.stderr).toBe(0);
    const [headline, notUndone, call] = forked.stdout.split("\n");
    expect(headline).toMatch(new RegExp(`^(ses_\\S+) \\(project prj_\\S+\\), forked from ${sessionId}$`));
    expect(notUndone).toMatch(/^not undone: 1 call /);
    expect(call).toMatch(new RegExp(`^ {2}bash \\(background_command\\)( \\(still running\\))? {2}run ${run.id} step 1 `));
    const forkId = headline!.split(" ")[0]!;
    expect((await foya(cli, "session", "show", forkId)).stdout).toMatch(
      new RegExp(`^ {2}forked from +${sessionId} at step 0 of run 1$`, "m"),
    );
    expect((await tenant.messages(forkId)).map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    const asJson = JSON.parse((await foya(cli, "fork", sessionId, "--step", "1", "--json")).stdout);
    expect(asJson).toMatchObject({ session: { id: expect.stringMatching(/^ses_/) }, notUndone: [] });

    // Edit and resend, the rewind half: back to just before the run, which becomes a branch.
    const userMessage = (await tenant.messages(sessionId)).find((message) => message.role === "user");
    const rewound = await foya(cli, "rewind", sessionId, "--message", userMessage.id);
    expect(rewound.exitCode, rewound.stderr).toBe(0);
    const [, branchId] = /what followed is branch (brn_\S+) \(1 run, 6 messages\)$/m.exec(rewound.stdout) ?? [];
    expect(rewound.stdout).toMatch(new RegExp(`^rewound ${sessionId} to the start; `));
    expect(rewound.stdout).toMatch(/^not undone: 1 call /m);
    expect(await tenant.messages(sessionId)).toEqual([]);
    const listed = await foya(cli, "branches", sessionId);
    expect(listed.stdout).toMatch(new RegExp(`^${branchId} {2}after the start: 1 run, 6 messages {2}\\S+\n$`));

    const back = JSON.parse((await foya(cli, "rewind", sessionId, "--branch", branchId!, "--json")).stdout);
    expect(back).toMatchObject({ restoredBranchId: branchId, branch: { runIds: [] } });
    expect((await tenant.messages(sessionId)).length).toBe(6);
    const branches = JSON.parse((await foya(cli, "branches", sessionId, "--json")).stdout) as Array<{
      id: string;
      restoredAt: string | null;
    }>;
    expect(branches.map((branch) => [branch.id, branch.restoredAt !== null])).toEqual([
      [back.branch.id, false],
      [branchId, true],
    ]);

    // Refused by the API: nothing follows the run's end (1); an unknown session (4); a wrong point (2, before any request).
    const nothingAfter = await foya(cli, "rewind", sessionId, "--run", run.id);
    expect(nothingAfter.exitCode).toBe(1);
    expect(nothingAfter.stderr).toMatch(/HTTP 409/);
    expect((await foya(cli, "fork", "ses_doesnotexist", "--step", "0")).exitCode).toBe(4);
    const usage = [
      ["fork", sessionId],
      ["fork", sessionId, "--message", "msg_x", "--step", "1"],
      ["fork", sessionId, "--step", "last"],
      ["fork", sessionId, "--branch", "brn_x"],
      ["rewind", sessionId, "--branch", "brn_x", "--run", run.id],
      ["branches"],
    ];
    const wrong = await Promise.all(usage.map((args) => foya(cli, ...args)));
    for (const [index, result] of wrong.entries()) expect(result.exitCode, usage[index]!.join(" ")).toBe(2);
  });

  it("E2: login writes the config with mode 0600 and later commands use it", async () => {
    const own: CliEnv = { FOYA_CONFIG_DIR: path.join(configDirs, "login") };
    const configFile = path.join(own.FOYA_CONFIG_DIR, "config.json");

    const notYet = await foya(own, "session", "new");
    expect(notYet.exitCode).toBe(1);
    expect(notYet.stderr).toContain("foya login");

    // A key the API refuses is not stored.
    const refused = await foya(own, "login", "--url", url, "--key", "foya_nonsense");
    expect(refused.exitCode).toBe(1);
    await expect(stat(configFile)).rejects.toThrow();

    const login = await foya(own, "login", "--url", url, "--key", tenant.key, "--json");
    expect(login.exitCode, login.stderr).toBe(0);
    expect(JSON.parse(login.stdout)).toEqual({ url, configPath: configFile });
    expect((await stat(configFile)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(configFile, "utf8"))).toEqual({ url, apiKey: tenant.key });

    // No URL or key in the environment: the stored ones; the new session is remembered, with the CLI's project.
    const created = await foya(own, "session", "new", "--json");
    expect(created.exitCode, created.stderr).toBe(0);
    const session = JSON.parse(created.stdout) as { id: string; projectId: string };
    expect(JSON.parse(await readFile(configFile, "utf8"))).toEqual({
      url,
      apiKey: tenant.key,
      projectId: session.projectId,
      sessionId: session.id,
    });
    expect((await stat(configFile)).mode & 0o777).toBe(0o600);
    const next = JSON.parse((await foya(own, "session", "new", "--json")).stdout) as { id: string; projectId: string };
    expect(next.projectId).toBe(session.projectId);

    // `run` without --session: the session made last.
    const followed = await foya(own, "run", script([[{ text: "stored config" }]]), "--follow");
    expect(followed.exitCode, followed.stderr).toBe(0);
    expect(followed.stdout).toContain("stored config");
    expect(followed.stderr).toContain(`in session ${next.id}`);

    // The environment wins over the file.
    const overridden = await foya({ ...own, FOYA_API_KEY: "foya_nonsense" }, "session", "show", next.id);
    expect(overridden.exitCode).toBe(1);
    expect(overridden.stderr).toMatch(/HTTP 401/);
  });
});
