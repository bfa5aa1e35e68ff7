import type { OptionGrammar } from "./read-arguments.js";

/** git's own sub-commands (2.39+): an alias cannot shadow them, and any other name may be an alias. */
export const gitSubcommands: ReadonlySet<string> = new Set([
  "add", "am", "annotate", "apply", "archive", "backfill", "bisect", "blame", "branch", "bugreport", "bundle", "cat-file", "check-attr",
  "check-ignore", "check-mailmap", "check-ref-format", "checkout", "checkout-index", "cherry", "cherry-pick", "citool", "clean", "clone",
  "column", "commit", "commit-graph", "commit-tree", "config", "count-objects", "credential", "describe", "diagnose", "diff", "diff-files",
  "diff-index", "diff-tree", "difftool", "fast-export", "fast-import", "fetch", "fetch-pack", "filter-branch", "fmt-merge-msg",
  "for-each-ref", "for-each-repo", "format-patch", "fsck", "gc", "get-tar-commit-id", "grep", "gui", "hash-object", "help", "hook",
  "index-pack", "init", "init-db", "instaweb", "interpret-trailers", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit",
  "maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv",
  "name-rev", "notes", "pack-objects", "pack-refs", "prune", "prune-packed", "pull", "push", "range-diff", "read-tree", "rebase", "reflog",
  "refs", "remote", "repack", "replace", "replay", "request-pull", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
  "send-email", "shortlog", "show", "show-branch", "show-index", "show-ref", "sparse-checkout", "stash", "status", "stripspace",
  "submodule", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info", "var",
  "verify-commit", "verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree",
]);

/** git's global options that take the next word as their value. */
export const gitGlobalValues: ReadonlySet<string> = new Set(["-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"]);

/** `git push` options that overwrite or delete remote history. */
export const gitPushForce = ["--force", "--force-with-lease", "--force-if-includes", "--delete", "--mirror", "--prune"];

/**
 * How the sub-commands with something to judge read their options. git
 * completes unambiguous prefixes of long options (`--har` is `--hard`), so the
 * names that matter are completed.
 */
export const gitGrammars: ReadonlyMap<string, OptionGrammar> = new Map<string, OptionGrammar>([
  ["clean", { shortValues: "e", longValues: ["--exclude"], completes: ["--dry-run"] }],
  ["reset", { longValues: ["--pathspec-from-file"], completes: ["--hard", "--merge"] }],
  ["checkout", { shortValues: "bB", longValues: ["--orphan", "--pathspec-from-file"], completes: ["--force", "--ours", "--theirs", "--patch", "--merge", "--pathspec-from-file"] }],
  ["restore", { shortValues: "s", longValues: ["--source", "--pathspec-from-file"], completes: ["--staged", "--worktree", "--source"] }],
  ["switch", { shortValues: "cC", longValues: ["--create", "--force-create", "--orphan"], completes: ["--force", "--discard-changes"] }],
  ["stash", { shortValues: "m", longValues: ["--message", "--pathspec-from-file"] }],
  ["branch", { shortValues: "u", longValues: ["--set-upstream-to", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"], completes: ["--force"] }],
  ["push", { shortValues: "o", longValues: ["--push-option", "--repo", "--receive-pack", "--exec"], completes: gitPushForce }],
  ["rm", { longValues: ["--pathspec-from-file"], completes: ["--force"] }],
  ["checkout-index", { completes: ["--force"] }],
  ["read-tree", { completes: ["--reset"] }],
  ["worktree", { shortValues: "b", completes: ["--force"] }],
  ["reflog", {}],
  ["gc", { completes: ["--prune"] }],
  ["prune", {}],
  ["update-ref", {}],
  ["filter-branch", {}],
  ["rebase", { shortValues: "xsX", longValues: ["--exec", "--onto", "--strategy", "--strategy-option"], completes: ["--exec"] }],
  ["difftool", { shortValues: "xt", longValues: ["--extcmd", "--tool"], completes: ["--extcmd"] }],
  ["grep", { shortValues: "efABCm", longValues: ["--max-count", "--context", "--after-context", "--before-context"], completes: ["--open-files-in-pager"] }],
  ["bisect", {}],
  ["submodule", {}],
  ["config", { shortValues: "f", longValues: ["--file", "--blob", "--type", "--default", "--comment", "--value"] }],
]);
