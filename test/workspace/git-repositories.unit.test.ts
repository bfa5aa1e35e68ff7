import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGitRepositories } from "../../src/workspace/git-repositories.js";

let base: string;
let workspace: string;
beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-git-repos-")));
  workspace = path.join(base, "ws");
  await mkdir(path.join(workspace, ".git", "hooks"), { recursive: true });
  await mkdir(path.join(workspace, "vendor", "a", ".git"), { recursive: true });
  await mkdir(path.join(workspace, "node_modules", "pkg", ".git"), { recursive: true });
  await mkdir(path.join(base, "outside", "x", ".git"), { recursive: true });
  await symlink(path.join(base, "outside"), path.join(workspace, "linked"));
  await mkdir(path.join(workspace, "wt"), { recursive: true });
  await writeFile(path.join(workspace, "wt", ".git"), "gitdir: ../.git/worktrees/wt\n");
});
afterAll(async () => rm(base, { recursive: true, force: true }));

describe("the repositories of a workspace", () => {
  it("S11: finds nested repositories and worktree pointers, never through links or node_modules, and notices changes between calls", async () => {
    const repositories = createGitRepositories();
    expect(repositories.find(workspace)).toEqual({ gitFolders: [".git", "vendor/a/.git"], gitFiles: ["wt/.git"], truncated: null });
    // A repository made since the last call, deep down, and one moved away.
    await mkdir(path.join(workspace, "src", "deep", "lib", ".git"), { recursive: true });
    await rename(path.join(workspace, "vendor", "a"), path.join(workspace, "vendor", "b"));
    expect(repositories.find(workspace).gitFolders.sort()).toEqual([".git", "src/deep/lib/.git", "vendor/b/.git"]);
    await rm(path.join(workspace, "src"), { recursive: true });
    expect(repositories.find(workspace).gitFolders).toEqual([".git", "vendor/b/.git"]);
    // Past the folder budget, it says the answer is partial.
    expect(createGitRepositories({ maxFolders: 2 }).find(workspace).truncated).toBe("folders");
  });
});
