/**
 * Git metadata that makes git run code or read configuration from elsewhere
 * (SPEC S11): hooks, config (`core.fsmonitor`,
 * `core.hooksPath`, filter drivers), worktree config, and the pointer files
 * that move a repository's common folder (`commondir`, `gitdir`, a `.git`
 * file). Protected in every repository of the workspace, nested ones,
 * submodules (`.git/modules/...`) and worktrees (`.git/worktrees/...`)
 * included, from every tool and in every mode.
 */
const protectedInGitFolder = new Set(["config", "config.worktree", "commondir", "gitdir"]);

/**
 * Why writing (or removing) this workspace path is refused, or null when it is
 * allowed. A whole `.git` folder may be removed (that runs nothing; the delete
 * tool has its own rule for it); it may not be written as a file.
 */
export function protectedGitReason(components: readonly string[], operation: "write" | "remove"): string | null {
  for (let index = 0; index < components.length; index++) {
    if (components[index] !== ".git") continue;
    const rest = components.slice(index + 1);
    if (rest.length === 0) {
      // The `.git` entry itself: a `.git` file would point git at a folder of the writer's choosing.
      return operation === "write" ? "a .git entry decides where git reads its configuration and hooks" : null;
    }
    if (rest.includes("hooks")) return "git hooks run as whoever next uses git in this repository";
    if (protectedInGitFolder.has(rest[rest.length - 1] as string)) return "git configuration can make git run commands";
  }
  return null;
}
