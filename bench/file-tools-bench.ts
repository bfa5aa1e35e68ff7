/**
 * Built-in tool benchmark (part of `npm run bench`): bash output capture while
 * a command prints 1 GiB, and write/edit with change records. Tools are called
 * directly; blobs go to an in-memory content-addressed store, so the figures
 * are the tools' own cost and the bytes they ask to store.
 */
import { createHash } from "node:crypto";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { defaultProcessLimits } from "../src/core/process-limits.js";
import { createSandbox } from "../src/sandbox/sandbox-runner.js";
import { findServiceDir } from "../src/sandbox/service-dir.js";
import { identityMode, toolIdentity } from "../src/sandbox/tool-identity.js";
import { bashTool } from "../src/tools/builtin/bash-tool.js";
import { editTool } from "../src/tools/builtin/edit-tool.js";
import { writeTool } from "../src/tools/builtin/write-tool.js";
import { createCallProcesses } from "../src/tools/shell/create-call-processes.js";
import type { Tool, ToolContext } from "../src/tools/tool.js";
import { createWorkspaceFolder, projectWorkspaceFiles } from "../src/workspace/project-workspace.js";

const toolPath = "/usr/local/bin:/usr/bin:/bin";
const workspacesDir = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bench-tools-")));
// A tenant slot no real tenant has: the bench's processes run as that uid, as a tenant's would.
const identity = toolIdentity(identityMode(1_000_000_000), 90_000_002);
const workspace = await createWorkspaceFolder(workspacesDir, ["tenant", "project"], identity);
const stored = new Map<string, number>();
const context: ToolContext = {
  tenantId: "ten_bench",
  sessionId: "ses_bench",
  runId: "run_bench",
  projectId: "prj_bench",
  workspace: projectWorkspaceFiles(workspacesDir, workspace),
  // Output capture through the sandbox every call uses; the sandbox's own cost is bench/sandbox-bench.ts.
  processes: createCallProcesses({
    runner: createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir, servicePaths: [findServiceDir()] }),
    toolPath,
    workspaceDir: workspace,
    confinement: { kind: "sandbox", network: false },
    identity,
    limits: defaultProcessLimits,
  }),
  approvalMode: "auto",
  provider: { profile: "scripted", model: "scripted" },
  exposedTools: [],
  signal: new AbortController().signal,
  deferredTools: { search: () => [], activate: async () => {} },
  commands: { start: async () => ({ error: "none" }), get: async () => undefined, cancel: async () => undefined },
  tasks: { replace: async () => {} },
  history: { readToolResult: async () => undefined },
  subagents: { start: async () => ({ ok: false, errorCode: "agent_unavailable", message: "no sub-agents here" }) },
  blobs: {
    async put(content) {
      const digest = createHash("sha256").update(content).digest("hex");
      if (!stored.has(digest)) stored.set(digest, content.length);
      return digest;
    },
  },
  reportProgress: async () => {},
};
const call = <A>(tool: unknown, args: A) => (tool as Tool<A>).run(context, args, { callId: "c", name: "t", argumentsRaw: "" });
const storedBytes = () => [...stored.values()].reduce((sum, size) => sum + size, 0);

try {
  // 1. bash capturing 1 GiB of output.
  const bash = bashTool;
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const start = performance.now();
  await call(bash, { command: "head -c 1073741824 /dev/zero | tr '\\0' 'y'", timeoutMs: 600_000 });
  const seconds = (performance.now() - start) / 1000;
  clearInterval(sampler);
  console.log(
    `bash output capture: 1 GiB in ${seconds.toFixed(2)} s = ${(1024 / seconds).toFixed(0)} MiB/s; peak RSS ${(peak / 1048576).toFixed(0)} MiB (growth ${((peak - rssBefore) / 1048576).toFixed(1)} MiB)`,
  );

  // 2. write and edit with change records.
  for (const size of [1024, 1024 * 1024]) {
    const base = "a".repeat(size - 16);
    stored.clear();
    const writes = size === 1024 ? 500 : 40;
    let begin = performance.now();
    for (let i = 0; i < writes; i++) await call(writeTool, { path: `w${size}.txt`, content: `${base}${String(i).padStart(16, "0")}` });
    const writeRate = writes / ((performance.now() - begin) / 1000);
    const writeStored = storedBytes();
    stored.clear();
    await call(writeTool, { path: `e${size}.txt`, content: `${base}${"0".repeat(16)}` });
    const afterCreate = storedBytes();
    begin = performance.now();
    for (let i = 0; i < writes; i++) {
      const from = String(i).padStart(16, "0");
      const to = String(i + 1).padStart(16, "0");
      await call(editTool, { path: `e${size}.txt`, old_string: from, new_string: to });
    }
    const editRate = writes / ((performance.now() - begin) / 1000);
    // Each edit changes 16 bytes; whole contents are stored once per digest.
    const perByte = (storedBytes() - afterCreate) / (writes * 16);
    console.log(
      `${size === 1024 ? "1 KiB" : "1 MiB"} files: write ${writeRate.toFixed(0)}/s (${(writeStored / writes / size).toFixed(2)} blob bytes per file byte), edit ${editRate.toFixed(0)}/s; blob bytes stored per byte changed by edit: ${perByte.toFixed(0)}`,
    );
  }
} finally {
  await rm(workspacesDir, { recursive: true, force: true });
}
