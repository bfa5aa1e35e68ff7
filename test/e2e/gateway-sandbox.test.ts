import { access, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true, fullAccess: true });

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

async function bashCall(
  sessionId: string,
  command: string,
): Promise<{ status: string; isError: boolean; text: string; approvals: number }> {
  const run = await client.startRun(sessionId, script([[{ tool: "bash", args: { command } }], [{ text: "ok" }]]));
  expect((await client.waitForRun(run.body.id)).status).toBe("completed");
  const [call] = await env.query<{ status: string; is_error: boolean; result: Array<{ text: string }> }>(
    "select status, is_error, result from tool_calls where run_id = $1",
    [run.body.id],
  );
  const approvals = await env.query("select id from approvals where run_id = $1", [run.body.id]);
  expectValidHistory(await client.messages(sessionId));
  return { status: call?.status ?? "", isError: call?.is_error ?? false, text: call?.result?.[0]?.text ?? "", approvals: approvals.length };
}

describe("gateway and sandbox together", () => {
  it("S1: a call the gateway allows still cannot escape the sandbox", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    // The path is built at run time, so no parse of the command line can see it: only the sandbox stops it.
    const target = "/usr/local/foya-s1-escape";
    const command = `node -e "require('fs').writeFileSync(['', 'usr', 'local', 'foya-s1-escape'].join('/'), 'x')"`;
    const result = await bashCall(sessionId, command);
    expect(result.approvals).toBe(0);
    expect(result.status).toBe("failed");
    expect(result.text).toMatch(/read-only|EROFS|EACCES|EPERM/i);
    expect(await exists(target)).toBe(false);
  });

  it("F4: a permanent delete in bash is refused in Auto and Manual, and allowed in Full Access", async () => {
    for (const mode of ["auto", "manual"] as const) {
      const { sessionId } = await client.newSession({ approvalMode: mode });
      const workspace = await env.workspaceOf(sessionId);
      await mkdir(path.join(workspace, "victim"));
      await writeFile(path.join(workspace, "victim", "file.txt"), "keep me");
      const result = await bashCall(sessionId, "FOO=1 sh -c 'rm -rf victim'");
      expect(result, mode).toMatchObject({ status: "denied", isError: true, approvals: 0 });
      expect(result.text).toMatch(/delete tool/);
      expect(await exists(path.join(workspace, "victim", "file.txt"))).toBe(true);
    }
    const { sessionId } = await client.newSession({ approvalMode: "full_access" });
    const workspace = await env.workspaceOf(sessionId);
    await mkdir(path.join(workspace, "victim"));
    const result = await bashCall(sessionId, "FOO=1 sh -c 'rm -rf victim'");
    expect(result).toMatchObject({ status: "succeeded", isError: false });
    expect(await exists(path.join(workspace, "victim"))).toBe(false);
  });

  it("S3, S11, X7: on the worker, a layered call in a repository commits and is recorded while the repository's hooks stay read-only, with the fixed tool PATH", async () => {
    const { sessionId, projectId } = await client.newSession({ approvalMode: "auto" });
    // A rule lets the commands run without asking: the sandbox is what is tested here (S1).
    expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["bash"] } })).status).toBe(200);
    const made = await bashCall(
      sessionId,
      "git init -q . && git -c user.name=t -c user.email=t@x commit -q --allow-empty -m one && echo made",
    );
    expect(made.text).toContain("made");
    // The path is built at run time, so only the sandbox can stop the write (the gateway is tested elsewhere).
    const hook = await bashCall(sessionId, 'd=.gi; d="${d}t/hooks"; echo evil > "$d/pre-commit"');
    expect(hook.text).toMatch(/Read-only file system/);
    const workspace = await env.workspaceOf(sessionId);
    expect(await exists(path.join(workspace, ".git", "hooks", "pre-commit"))).toBe(false);
    const work = await bashCall(
      sessionId,
      "git -c user.name=t -c user.email=t@x commit -q --allow-empty -m two && echo note > notes.txt && git log --oneline | wc -l && echo $PATH",
    );
    // Never the service's own PATH (this test process's has node_modules/.bin folders in it).
    expect(process.env.PATH).not.toBe(env.config.tools.path);
    expect(work.text).toMatch(new RegExp(`^2\n${env.config.tools.path}\n\n\\[exit code 0\\]`));
    expect(await exists(path.join(workspace, "notes.txt"))).toBe(true);
  });

  it("S2: Auto runs a plain workspace command without asking, and asks for one that reaches the network", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const plain = await bashCall(sessionId, "echo hello > greeting.txt && cat greeting.txt");
    expect(plain).toMatchObject({ status: "succeeded", approvals: 0 });
    expect(plain.text).toContain("hello");

    const run = await client.startRun(
      sessionId,
      script([[{ tool: "bash", args: { command: "curl -s https://example.com" } }], [{ text: "ok" }]]),
    );
    const pending = await (async () => {
      for (let i = 0; i < 400; i++) {
        const listed = await client.get(`/v1/approvals?status=pending&runId=${run.body.id}`);
        if (listed.body.approvals.length > 0) return listed.body.approvals[0];
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error("no approval was requested");
    })();
    expect(pending.requestReason).toMatch(/network|curl/i);
    await client.post(`/v1/approvals/${pending.id}`, { decision: "deny", reason: "no network today" });
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
  });
});
