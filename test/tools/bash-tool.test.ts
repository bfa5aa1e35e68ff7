import { mkdtemp, readFile, realpath } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createSandbox } from "../../src/sandbox/sandbox-runner.js";
import { createBashTool } from "../../src/tools/builtin/bash-tool.js";
import type { Tool, ToolContext, ToolResult } from "../../src/tools/tool.js";
import { repoRoot } from "../helpers/test-env.js";
import { toolContext } from "../helpers/tool-context.js";

const toolPath = "/usr/local/bin:/usr/bin:/bin";
let bash: Tool<{ command: string; timeoutMs?: number }>;
let workspace: string;

beforeAll(async () => {
  workspace = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bash-")));
  // Outside Full Access bash runs sandboxed (test/sandbox covers the sandbox itself).
  const sandbox = createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir: path.dirname(workspace), servicePaths: [repoRoot] });
  bash = createBashTool({ path: toolPath, sandbox }) as unknown as typeof bash;
});

type RunOptions = { timeoutMs?: number; approvalMode?: ToolContext["approvalMode"]; signal?: AbortSignal };

function context(options: RunOptions = {}): ToolContext {
  const { timeoutMs: _timeout, ...overrides } = options;
  // Full Access has no sandbox, as the worker passes it.
  return toolContext({ workspaceDir: workspace, exposedTools: ["bash"], ...(options.approvalMode === "full_access" ? { sandbox: null } : {}), ...overrides });
}

const run = (command: string, options: RunOptions = {}): Promise<ToolResult> =>
  bash.run(context(options), { command, ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}) }, { callId: "c", name: "bash", argumentsRaw: "" });
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");
/** Running, as opposed to gone or a zombie waiting to be reaped (an init that does not reap leaves those). */
const alive = async (pid: number): Promise<boolean> => {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    return !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
};

describe("bash", () => {
  it("runs in the workspace with a scrubbed environment", async () => {
    process.env.FOYA_PROBE_SECRET = "must-not-leak";
    const result = await run("pwd; env | sort");
    expect(result.isError).toBeUndefined();
    expect(text(result).split("\n")[0]).toBe(workspace);
    expect(text(result)).toContain("TERM=dumb");
    expect(text(result)).toContain("PAGER=cat");
    expect(text(result)).not.toContain("must-not-leak");
    expect(text(result)).not.toMatch(/DATABASE_URL|REDIS_URL/);
    expect(text(result)).toMatch(/\[exit code 0\]$/);
  });

  it("T4: a non-zero exit is an is_error result carrying the output and the code", async () => {
    const result = await run("echo before; echo oops >&2; exit 3");
    expect(result).toMatchObject({ isError: true, errorCode: "exit_code" });
    expect(text(result)).toMatch(/before\noops\n\n\[exit code 3\]$/);
  });

  // The pid files below hold host pids only without a sandbox (inside, pids are the sandbox's own);
  // test/sandbox/sandbox-escape.test.ts covers the same for sandboxed calls.
  it("C1: a timeout kills the whole process group, background children included", async () => {
    const result = await run("sleep 30 & echo $! > bg.pid; sleep 30", { timeoutMs: 500, approvalMode: "full_access" });
    expect(result).toMatchObject({ isError: true, errorCode: "timeout" });
    const pid = Number(await readFile(path.join(workspace, "bg.pid"), "utf8"));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await alive(pid)).toBe(false);
  });

  it("C1: cancelling aborts the command and its children; nothing outlives a finished command", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const cancelled = await run("sleep 30 & echo $! > cancel.pid; wait", { signal: controller.signal, approvalMode: "full_access" });
    expect(cancelled).toMatchObject({ isError: true, errorCode: "cancelled" });
    const finished = await run("sleep 30 > /dev/null 2>&1 & echo $! > left.pid; echo done", { approvalMode: "full_access" });
    expect(text(finished)).toContain("done");
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const file of ["cancel.pid", "left.pid"]) expect(await alive(Number(await readFile(path.join(workspace, file), "utf8"))), file).toBe(false);
  });

  it("F4: permanent deletes are refused outside Full Access and run in Full Access", async () => {
    const refused = await run("touch x && FOO=1 rm -f x");
    expect(refused).toMatchObject({ isError: true, errorCode: "permanent_delete_refused" });
    expect(await run("touch y && rm -f y && echo gone", { approvalMode: "full_access" })).toMatchObject({ content: [{ text: expect.stringContaining("gone") }] });
  });

  it("O1: output keeps a small head and mostly the tail, with the omitted counts", async () => {
    const result = await run("seq 1 100000");
    const output = text(result);
    expect(output.startsWith("1\n2\n3\n")).toBe(true);
    expect(output).toMatch(/99999\n100000\n\n\[exit code 0\]$/);
    const omitted = /\[… (\d+) of 100000 lines and (\d+) of 588895 bytes omitted …\]/.exec(output);
    expect(omitted).not.toBeNull();
    expect(output.length).toBeLessThan(33 * 1024);
  });

  it("O1: a command that prints 1 GiB grows this process's memory by less than 64 MiB", async () => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const result = await run("head -c 1073741824 /dev/zero | tr '\\0' 'y'", { timeoutMs: 300_000 });
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(text(result)).toContain("of 1073741824 bytes omitted");
    expect(peak - before).toBeLessThan(64 * 1024 * 1024);
  }, 300_000);
});
