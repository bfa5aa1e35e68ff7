import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { bashTool } from "../../src/tools/builtin/bash-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { repoRoot } from "../helpers/test-env.js";
import { readyForTools, toolContext, toolPath } from "../helpers/tool-context.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// The git folders of a workspace are protected in every sandbox (SPEC S11), but the workspace is the
// tenant's to change while a sandbox is being set up (SPEC S3): a folder found by descriptor and then handed
// to bwrap by path could be a symlink by the time bwrap resolved it, and bwrap resolves paths on the host.
const bash = bashTool as unknown as Tool<{ command: string }>;
let base: string;
let workspace: string;
let service: string;
let runner: SandboxRunner;
let canary: Canary;
let racer: ChildProcess | undefined;
const secret = `service-secret-${randomBytes(8).toString("hex")}`;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-gitrace-")));
  workspace = path.join(base, "workspaces", "ten", "prj");
  // A checkout of the service beside the workspaces, readable by every local user (as a checkout usually is).
  service = path.join(base, "service");
  await mkdir(path.join(service, ".git", "hooks"), { recursive: true });
  await writeFile(path.join(service, ".git", "config"), `[core]\n\tsecret = ${secret}\n`);
  await chmod(base, 0o711);
  await mkdir(path.join(workspace, "g"), { recursive: true });
  execFileSync("git", ["-C", path.join(workspace, "g"), "init", "-q"]);
  runner = createSandbox({
    bwrapPath: "bwrap",
    searchPath: toolPath,
    workspacesDir: path.join(base, "workspaces"),
    servicePaths: [repoRoot],
  });
  await readyForTools(workspace);
  canary = watch([service]);
});
afterAll(async () => {
  racer?.kill("SIGKILL");
  await rm(base, { recursive: true, force: true });
});

const run = (command: string): Promise<ToolResult> =>
  bash.run(
    toolContext({ workspaceDir: workspace, runner, exposedTools: ["bash"] }),
    { command },
    { callId: "c", name: "bash", argumentsRaw: "" },
  );
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");

describe("escape suite: git folders swapped while a sandbox is set up", () => {
  it("S3, S11: a racing process that swaps a repository's folder for a symlink to the host never gets a host folder mounted in the sandbox", async () => {
    // The tenant's own process flips `g` between the repository and a relative symlink that leads, on the host, to the
    // service's checkout, as fast as it can (perl: no process per step).
    const link = path.relative(workspace, service);
    // (setpriv: the racer dies with this test's process, however it ends.)
    racer = spawn(
      "setpriv",
      [
        "--pdeathsig",
        "SIGKILL",
        "--",
        "perl",
        "-e",
        'my $l = shift; while (1) { rename "g", "g.real"; symlink $l, "g"; select(undef, undef, undef, 0.001); unlink "g"; rename "g.real", "g"; select(undef, undef, undef, 0.004); }',
        link,
      ],
      { cwd: workspace, stdio: "ignore" },
    );
    const outcomes = { ran: 0, refused: 0 };
    await attempt(
      "a repository folder swapped for a symlink to the host while calls start",
      canary,
      async () => {
        for (let call = 0; call < 60; call++) {
          const result = await run("cat g/.git/config g.real/.git/config 2>/dev/null; ls -a / 2>/dev/null; true");
          expect(text(result)).not.toContain(secret);
          if (result.isError) {
            // Refusing a call whose repository moved while its sandbox was set up is fine; nothing ran.
            expect(text(result)).toMatch(/Sandbox unavailable/);
            outcomes.refused++;
          } else outcomes.ran++;
        }
      },
      { escapeClass: "git-bind-race" },
    );
    racer.kill("SIGKILL");
    // Calls still run while the workspace holds still.
    await new Promise((resolve) => racer?.once("exit", resolve));
    execFileSync("bash", ["-c", "if [ -d g.real ] && [ ! -e g ]; then mv g.real g; elif [ -L g ]; then rm g; mv g.real g; fi"], {
      cwd: workspace,
    });
    const calm = await run("git -C g status --short && echo fine");
    expect(text(calm)).toMatch(/fine\n\n\[exit code 0\]$/);
    expect(outcomes.ran + outcomes.refused).toBe(60);
  }, 240_000);
});
