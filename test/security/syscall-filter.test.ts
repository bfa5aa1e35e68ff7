import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Confinement } from "../../src/sandbox/confinement.js";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { bashTool } from "../../src/tools/builtin/bash-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { repoRoot } from "../helpers/test-env.js";
import { readyForTools, toolContext, toolPath } from "../helpers/tool-context.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// The sandbox's seccomp filter (SPEC S3, S7): the kernel's most exposed system calls fail with EPERM in every
// sandboxed process, Full Access's included, while ordinary work runs on.
const bash = bashTool as unknown as Tool<{ command: string }>;
let base: string;
let workspace: string;
let runner: SandboxRunner;
let canary: Canary;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-seccomp-")));
  workspace = path.join(base, "workspaces", "ten", "prj");
  await mkdir(workspace, { recursive: true });
  runner = createSandbox({
    bwrapPath: "bwrap",
    searchPath: toolPath,
    workspacesDir: path.join(base, "workspaces"),
    servicePaths: [repoRoot],
  });
  await readyForTools(workspace);
  canary = watch([path.join(base, "workspaces", "ten")]);
});
afterAll(async () => rm(base, { recursive: true, force: true }));

const run = (command: string, confinement: Confinement): Promise<ToolResult> =>
  bash.run(
    toolContext({ workspaceDir: workspace, runner, exposedTools: ["bash"], confinement }),
    { command },
    { callId: "c", name: "bash", argumentsRaw: "" },
  );
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");

/** System call numbers, restated from the kernel's tables (not from src/), for raw calls through perl's syscall(). */
const numbers: Record<string, { x64: number; arm64: number }> = {
  ptrace: { x64: 101, arm64: 117 },
  keyctl: { x64: 250, arm64: 219 },
  bpf: { x64: 321, arm64: 280 },
  userfaultfd: { x64: 323, arm64: 282 },
  perf_event_open: { x64: 298, arm64: 241 },
  io_uring_setup: { x64: 425, arm64: 425 },
  open_by_handle_at: { x64: 304, arm64: 265 },
  mount: { x64: 165, arm64: 40 },
  clone: { x64: 56, arm64: 220 },
};
const nr = (name: string) => numbers[name]![process.arch === "arm64" ? "arm64" : "x64"];
/** A raw call whose result perl prints: `denied` for EPERM, else what happened. */
const raw = (name: string, args: string) =>
  `perl -e 'my $r = syscall(${nr(name)}, ${args}); print $r == -1 ? ($!{EPERM} ? "denied\\n" : "failed: $!\\n") : "allowed: $r\\n"'`;

describe("escape suite: system calls", () => {
  for (const confinement of [{ kind: "sandbox", network: false }, { kind: "full_access" }] as const) {
    it(`S3, S7: the kernel's most exposed system calls fail with EPERM in the sandbox (${confinement.kind})`, async () => {
      const attacks: Array<{ name: string; command: string; refused: RegExp }> = [
        { name: "a new user namespace", command: "unshare -U -r id -u", refused: /unshare failed: Operation not permitted/ },
        { name: "a new mount namespace", command: "unshare -m true", refused: /unshare failed: Operation not permitted/ },
        {
          // clone(CLONE_NEWUSER | SIGCHLD): a child that got through would exit at once.
          name: "a user namespace through clone",
          command: `perl -e 'my $r = syscall(${nr("clone")}, 0x10000011, 0, 0, 0, 0); exit 0 if $r == 0; print $r == -1 ? ($!{EPERM} ? "denied\\n" : "failed: $!\\n") : "allowed\\n"'`,
          refused: /^denied$/m,
        },
        { name: "turning address-space randomization off", command: "setarch -R true", refused: /Operation not permitted/ },
        { name: "ptrace", command: raw("ptrace", "0, 0, 0, 0"), refused: /^denied$/m },
        // KEYCTL_GET_KEYRING_ID of the session keyring: answers an id wherever keyrings are reachable.
        { name: "kernel keyrings", command: raw("keyctl", "0, -3, 1"), refused: /^denied$/m },
        { name: "eBPF", command: raw("bpf", "0, 0, 0"), refused: /^denied$/m },
        { name: "userfaultfd", command: raw("userfaultfd", "1"), refused: /^denied$/m },
        { name: "perf events", command: raw("perf_event_open", "0, 0, -1, -1, 0"), refused: /^denied$/m },
        { name: "io_uring", command: raw("io_uring_setup", "1, 0"), refused: /^denied$/m },
        { name: "file handles", command: raw("open_by_handle_at", "-100, 0, 0"), refused: /^denied$/m },
        { name: "mount", command: raw("mount", "0, 0, 0, 0, 0"), refused: /^denied$/m },
        {
          name: "vsock sockets",
          command: `perl -e 'socket(my $s, 40, 1, 0) ? print "allowed\\n" : print $!{EPERM} ? "denied\\n" : "failed: $!\\n"'`,
          refused: /^denied$/m,
        },
      ];
      for (const { name, command, refused } of attacks) {
        await attempt(
          `${name} (${confinement.kind})`,
          canary,
          async () => {
            const result = await run(command, confinement);
            expect(text(result), `${name}: ${command}`).toMatch(refused);
          },
          { escapeClass: "seccomp" },
        );
      }
    });
  }

  it("S3: under the filter ordinary work runs: shells, git, python, node, loopback sockets, and the usual personality", async () => {
    const work = await run(
      [
        "git init -q repo && git -C repo -c user.name=t -c user.email=t@x commit -q --allow-empty -m one && git -C repo log --oneline | wc -l",
        `python3 -c 'import socket, multiprocessing; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print("python", multiprocessing.cpu_count() > 0)'`,
        `node -e 'require("net").createServer().listen(0, "127.0.0.1", function () { console.log("node", this.address().port > 0); this.close(); })'`,
        "setarch $(uname -m) true && echo personality",
        "echo $PATH",
      ].join(" && "),
      { kind: "sandbox", network: false },
    );
    expect(text(work)).toBe(`1\npython True\nnode true\npersonality\n${toolPath}\n\n[exit code 0]`);
  });
});
