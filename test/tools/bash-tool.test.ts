import { mkdir, mkdtemp, realpath } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { bashTool } from "../../src/tools/builtin/bash-tool.js";
import type { Tool, ToolContext, ToolResult } from "../../src/tools/tool.js";
import { repoRoot } from "../helpers/test-env.js";
import { toolContext, toolPath } from "../helpers/tool-context.js";
import { killAll, survivorsAfter, uniqueMarker } from "../sandbox/host-processes.js";

const bash = bashTool as unknown as Tool<{ command: string; timeoutMs?: number }>;
let workspace: string;
let runner: SandboxRunner;
const markers = new Set<string>();

beforeAll(async () => {
  const workspaces = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bash-")));
  workspace = path.join(workspaces, "tenant", "project");
  await mkdir(workspace, { recursive: true });
  // Every call runs under bubblewrap (test/sandbox covers the sandbox itself).
  runner = createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir: workspaces, servicePaths: [repoRoot] });
});
afterAll(async () => killAll(markers));

type RunOptions = { timeoutMs?: number; approvalMode?: ToolContext["approvalMode"]; signal?: AbortSignal };

function context(options: RunOptions = {}): ToolContext {
  const { timeoutMs: _timeout, approvalMode, ...overrides } = options;
  return toolContext({
    workspaceDir: workspace,
    runner,
    exposedTools: ["bash"],
    ...(approvalMode === "full_access" ? { confinement: { kind: "full_access" } } : {}),
    ...overrides,
  });
}

const run = (command: string, options: RunOptions = {}): Promise<ToolResult> =>
  bash.run(
    context(options),
    { command, ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}) },
    { callId: "c", name: "bash", argumentsRaw: "" },
  );
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");
/** A `sleep` the test can find among the host's processes by its unique duration. */
const marked = (): string => {
  const marker = uniqueMarker();
  markers.add(marker);
  return marker;
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

  // Full Access runs in its own PID namespace too (S8): the host's process table shows whether anything is left.
  for (const approvalMode of ["auto", "full_access"] as const) {
    it(`C1: a timeout kills the whole process tree, background children included (${approvalMode})`, async () => {
      const marker = marked();
      const result = await run(`sleep ${marker} & sleep ${marker}`, { timeoutMs: 500, approvalMode });
      expect(result).toMatchObject({ isError: true, errorCode: "timeout" });
      expect(await survivorsAfter(marker, 2000)).toEqual([]);
    });

    it(`C1: cancelling aborts the command and its children; nothing outlives a finished command (${approvalMode})`, async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      const cancelledMarker = marked();
      const cancelled = await run(`sleep ${cancelledMarker} & wait`, { signal: controller.signal, approvalMode });
      expect(cancelled).toMatchObject({ isError: true, errorCode: "cancelled" });
      const leftMarker = marked();
      const finished = await run(`sleep ${leftMarker} > /dev/null 2>&1 & echo done`, { approvalMode });
      expect(text(finished)).toContain("done");
      expect(await survivorsAfter(cancelledMarker, 2000)).toEqual([]);
      expect(await survivorsAfter(leftMarker, 2000)).toEqual([]);
    });
  }

  it("F4: permanent deletes are refused outside Full Access and run in Full Access", async () => {
    const refused = await run("touch x && FOO=1 rm -f x");
    expect(refused).toMatchObject({ isError: true, errorCode: "permanent_delete_refused" });
    expect(await run("touch y && rm -f y && echo gone", { approvalMode: "full_access" })).toMatchObject({
      content: [{ text: expect.stringContaining("gone") }],
    });
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
