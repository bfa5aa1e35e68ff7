import type { ShellWord } from "../shell-syntax.js";
import { gitConfigOption, gitConfigWrite } from "./git-config.js";
import { gitGlobalValues, gitGrammars, gitPushForce, gitSubcommands } from "./git-subcommands.js";
import { discards, optionsUnknown, runsCommandLine, type ProgramEffects } from "./program-effects.js";
import { has, readArguments, type ReadArguments } from "./read-arguments.js";
import { deleteTool } from "./shell-finding.js";

/** `git [global options] SUB …`: `-c` configuration, the aliases it defines, and what the sub-command does. */
export function gitEffects(args: readonly ShellWord[], effects: ProgramEffects): void {
  const aliases = new Map<string, string>();
  let index = 0;
  for (; index < args.length; index++) {
    const text = (args[index] as ShellWord).text;
    if (!text.startsWith("-")) break;
    if (text === "-c") gitConfigOption(args[++index], aliases, effects);
    else if (text === "--config-env" || text.startsWith("--config-env=") || text.startsWith("--exec-path=")) {
      effects.findings.push({
        kind: "unknown",
        reason: `git ${text.split("=")[0]} takes configuration or commands from elsewhere, which cannot be judged`,
      });
      if (text === "--config-env") index++;
    } else if (gitGlobalValues.has(text)) index++;
  }
  const sub = args[index];
  if (!sub) return;
  const rest = args.slice(index + 1);
  const grammar = sub.literal ? gitGrammars.get(sub.text) : undefined;
  if (grammar) {
    const read = readArguments(rest, grammar);
    if (read.dynamic) effects.findings.push(optionsUnknown(`git ${sub.text}`, read.dynamic));
    gitSubcommandEffects(sub.text, read, rest, effects);
  } else if (!sub.literal) {
    effects.findings.push({ kind: "unknown", reason: `git runs a sub-command only known at run time ("${sub.text}")` });
  } else if (!gitSubcommands.has(sub.text)) {
    const alias = aliases.get(sub.text.toLowerCase());
    if (alias === undefined)
      effects.findings.push({
        kind: "unknown",
        reason: `git ${sub.text} is not a git command: an alias or a git-${sub.text} program, whose commands cannot be judged`,
      });
    else effects.scripts.push({ text: expandGitAlias(alias, args.slice(0, index), rest), via: `the git alias ${sub.text}` });
  }
}

/** Deletes, discarded work and commands of one sub-command; `read` is `args` read with its grammar. */
function gitSubcommandEffects(sub: string, read: ReadArguments, args: readonly ShellWord[], effects: ProgramEffects): void {
  const first = read.positionals[0];
  switch (sub) {
    case "clean":
      if (!has(read, "-n", "--dry-run"))
        effects.findings.push({ kind: "permanent_delete", reason: `git clean deletes untracked files permanently; ${deleteTool}` });
      return;
    case "reset":
      if (has(read, "--hard", "--merge")) discards(effects, "git reset --hard discards uncommitted changes");
      return;
    case "checkout":
      if (
        checksOutPaths(read) ||
        has(read, "-f", "--force", "--ours", "--theirs", "-p", "--patch", "-m", "--merge", "--pathspec-from-file")
      ) {
        discards(effects, "git checkout of paths, or forced, discards uncommitted changes");
      }
      return;
    case "restore":
      // `git restore --staged f` only unstages: the working tree holds the unsaved work
      if (!has(read, "-S", "--staged") || has(read, "-W", "--worktree"))
        discards(effects, "git restore discards uncommitted changes in the working tree");
      return;
    case "switch":
      if (has(read, "-f", "--force", "--discard-changes")) discards(effects, "git switch --discard-changes discards uncommitted changes");
      return;
    case "stash":
      if (first?.text === "drop" || first?.text === "clear") discards(effects, `git stash ${first.text} deletes stashed changes`);
      return;
    case "reflog":
      if (first?.text === "expire" || first?.text === "delete")
        discards(effects, `git reflog ${first.text} deletes the record that recovers lost commits`);
      return;
    case "branch":
      if (has(read, "-D", "-M", "-C", "-f", "--force"))
        discards(effects, "git branch -D deletes or overwrites a branch, with commits no other branch has");
      return;
    case "push":
      // `+main` forces, `:old` deletes
      if (read.positionals.slice(1).some((refspec) => /^[+:]/.test(refspec.text)) || has(read, "-f", "-d", ...gitPushForce)) {
        discards(effects, "git push --force overwrites or deletes history on the remote");
      }
      return;
    case "rm":
    case "checkout-index":
      if (has(read, "-f", "--force")) discards(effects, `git ${sub} -f overwrites or deletes files with uncommitted changes`);
      return;
    case "read-tree":
      // `-u` writes the working tree; with `--reset` or `-m` it overwrites what differs
      if (has(read, "-u") && has(read, "--reset", "-m")) discards(effects, "git read-tree -u --reset discards uncommitted changes");
      return;
    case "worktree":
      if (first?.text === "remove" && has(read, "-f", "--force"))
        discards(effects, "git worktree remove --force deletes a working tree with its uncommitted changes");
      return;
    case "gc":
      if (read.options.some((option) => option.name === "--prune" && option.value !== null))
        discards(effects, "git gc --prune=now deletes unreachable commits at once");
      return;
    case "prune":
    case "update-ref":
    case "filter-branch":
      discards(effects, `git ${sub} rewrites or deletes history past git's safety checks`);
      return;
    case "rebase":
    case "difftool":
      for (const option of read.options)
        if (["-x", "--exec", "--extcmd"].includes(option.name)) runsCommandLine(effects, option.value, `git ${sub} ${option.name}`);
      return;
    case "grep":
      if (has(read, "-O", "--open-files-in-pager"))
        effects.findings.push({ kind: "unknown", reason: "git grep -O opens the files in a program that cannot be judged" });
      return;
    case "bisect":
      if (first?.text === "run") effects.commands.push(args.slice(args.indexOf(first) + 1));
      return;
    case "submodule":
      if (first?.text === "foreach") submoduleForeach(args.slice(args.indexOf(first) + 1), effects);
      return;
    case "config":
      gitConfigWrite(read, effects);
      return;
  }
}

/** `git checkout -- f`, `git checkout HEAD f`, `git checkout .`; a single name may be a branch, unless it looks like a path. */
function checksOutPaths(read: ReadArguments): boolean {
  const [target, ...more] = read.positionals;
  return read.dashes || more.length > 0 || (target !== undefined && looksLikePath(target.text));
}

/** `.`, `./x`, `src/a.ts`, `*.ts`: a path rather than a branch. Without `--`, a file with no extension reads as a branch. */
function looksLikePath(text: string): boolean {
  if (text === "." || text === ".." || /^(?:\.\.?\/|\/|:)/.test(text) || text.endsWith("/") || /[*?[]/.test(text)) return true;
  return /\.[A-Za-z]/.test(text.slice(text.lastIndexOf("/") + 1));
}

/** `git submodule foreach [--recursive] CMD…`: the words are joined into one command line for the shell. */
function submoduleForeach(words: readonly ShellWord[], effects: ProgramEffects): void {
  let start = 0;
  while (words[start]?.text.startsWith("-")) start++;
  if (start < words.length)
    effects.scripts.push({
      text: words
        .slice(start)
        .map((word) => word.text)
        .join(" "),
      via: "git submodule foreach",
    });
}

/**
 * The command line an alias runs: `!…` through the shell with the arguments
 * appended; otherwise git again with the alias's words and the same global
 * options, so chained aliases resolve too (a loop ends at the analysis's
 * nesting limit, and asks).
 */
function expandGitAlias(alias: string, globals: readonly ShellWord[], rest: readonly ShellWord[]): string {
  const args = rest.map(quoteWord).join(" ");
  if (alias.startsWith("!")) return `${alias.slice(1)} ${args}`;
  return `git ${globals.map(quoteWord).join(" ")} ${alias} ${args}`;
}

/** Quotes a literal word for a command line we build; a word only known at run time stays an expansion, so it is judged unknown again. */
function quoteWord(word: ShellWord): string {
  return word.literal ? `'${word.text.replaceAll("'", "'\\''")}'` : word.text;
}
