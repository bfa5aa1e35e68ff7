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
