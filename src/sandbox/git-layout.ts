import { lstatSync } from "node:fs";
import path from "node:path";
import type { GitRepositories } from "../workspace/git-repositories.js";
import type { SandboxLayout } from "./mount-plan.js";

/** Inside a git folder, what makes git run code or read configuration elsewhere. */
const guarded = ["hooks", "config", "config.worktree", "commondir"];

/**
 * The read-only git metadata of a sandboxed call (SPEC S11; issue #12 item 4):
 * every repository in the workspace, nested ones included (`repositories`
 * finds them, cheaply on repeated calls). Each git folder is pinned on itself
 * so it cannot be renamed away and replaced, and its hooks and config are
 * bound read-only; a `.git` file (a worktree's or submodule's pointer) is
 * read-only too. When hooks or config is a symlink (which could be
 * re-pointed), the whole git folder is read-only instead. A repository the
 * command creates during the call is its own until the next call; git run on
 * the host by anyone else refuses it (it belongs to the tenant's uid).
 */
export function gitLayout(workspace: string, repositories: GitRepositories): SandboxLayout["git"] & { truncated: boolean } {
  const found = repositories.find(workspace);
  const pins: string[] = [];
  const readOnly: string[] = found.gitFiles.map((file) => path.join(workspace, file));
  for (const folder of found.gitFolders) {
    const absolute = path.join(workspace, folder);
    const entries = guarded.map((name) => ({
      path: path.join(absolute, name),
      stats: lstatSync(path.join(absolute, name), { throwIfNoEntry: false }),
    }));
    if (entries.some((entry) => entry.stats?.isSymbolicLink())) {
      readOnly.push(absolute);
      continue;
    }
    pins.push(absolute);
    readOnly.push(...entries.filter((entry) => entry.stats).map((entry) => entry.path));
  }
  return { pins, readOnly, truncated: found.truncated };
}
