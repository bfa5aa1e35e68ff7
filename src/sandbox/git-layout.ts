import { lstatSync } from "node:fs";
import path from "node:path";
import { openWorkspaceFiles } from "../workspace/open-workspace-files.js";
import type { SandboxLayout } from "./mount-plan.js";

/** Folders looked at per call when looking for repositories; past it, deeper repositories go unprotected (and the plan says so). */
const maxEntries = 20_000;
/** Inside a git folder, what makes git run code or read configuration elsewhere. */
const guarded = ["hooks", "config", "config.worktree", "commondir"];

/**
 * The read-only git metadata of a sandboxed call (SPEC S11; issue #12 item 4):
 * every repository in the workspace, nested ones included, found by a bounded
 * walk that never follows a link (node_modules is not searched). Each git
 * folder is pinned on itself so it cannot be renamed away and replaced, and its
 * hooks and config are bound read-only; a `.git` file (a worktree's or
 * submodule's pointer) is read-only too. When hooks or config is a symlink
 * (which could be re-pointed), the whole git folder is read-only instead.
 * A repository the command creates during the call is its own until the next.
 */
export async function gitLayout(workspace: string): Promise<SandboxLayout["git"] & { truncated: boolean }> {
  const gitFolders: string[] = [];
  const gitFiles: string[] = [];
  // The walk needs no trash: it only looks.
  const files = openWorkspaceFiles({ root: workspace, trashStaging: workspace });
  const outcome = await files.walk(
    {
      skipFolders: new Set(["node_modules"]),
      maxEntries,
      enter(folder) {
        if (path.basename(folder) !== ".git") return true;
        gitFolders.push(folder);
        return false;
      },
    },
    (file) => {
      if (path.basename(file.path) === ".git") gitFiles.push(file.path);
    },
  );
  const pins: string[] = [];
  const readOnly: string[] = gitFiles.map((file) => path.join(workspace, file));
  for (const folder of gitFolders) {
    const absolute = path.join(workspace, folder);
    const entries = guarded.map((name) => ({ path: path.join(absolute, name), stats: lstatSync(path.join(absolute, name), { throwIfNoEntry: false }) }));
    if (entries.some((entry) => entry.stats?.isSymbolicLink())) {
      readOnly.push(absolute);
      continue;
    }
    pins.push(absolute);
    readOnly.push(...entries.filter((entry) => entry.stats).map((entry) => entry.path));
  }
  return { pins, readOnly, truncated: outcome.truncated };
}
