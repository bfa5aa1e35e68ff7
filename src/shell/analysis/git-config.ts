import type { ShellWord } from "../shell-syntax.js";
import type { ProgramEffects } from "./program-effects.js";
import { has, type ReadArguments } from "./read-arguments.js";

/** Configuration keys (lower case) that make git run nothing and read nothing from elsewhere. */
const gitHarmlessConfig: ReadonlySet<string> = new Set([
  "user.name",
  "user.email",
  "core.quotepath",
  "core.autocrlf",
  "core.safecrlf",
  "core.filemode",
  "core.ignorecase",
  "core.abbrev",
  "init.defaultbranch",
  "commit.gpgsign",
  "tag.gpgsign",
  "pull.rebase",
  "pull.ff",
  "merge.ff",
  "rebase.autostash",
  "push.default",
  "push.autosetupremote",
  "gc.auto",
  "maintenance.auto",
  "diff.renames",
  "diff.algorithm",
  "diff.noprefix",
  "log.showsignature",
  "fetch.prune",
  "status.showuntrackedfiles",
  "protocol.version",
]);
const gitHarmlessSections = ["color.", "advice.", "i18n.", "column."];
/** Keys whose value is a command line git runs: judged as that command line (`git -c core.pager=cat log`). */
const gitCommandConfig: ReadonlySet<string> = new Set([
  "core.pager",
  "core.editor",
  "sequence.editor",
  "core.sshcommand",
  "core.askpass",
  "diff.external",
]);

/** `git config KEY VALUE` (or `git config set`) of a key that can make git run commands later. */
export function gitConfigWrite(read: ReadArguments, effects: ProgramEffects): void {
  const [first, second] = read.positionals.map((word) => word.text);
  if (has(read, "-e", "--edit", "--rename-section") || first === "edit" || first === "rename-section") {
    effects.findings.push({
      kind: "dangerous",
      reason: "git config edits or renames configuration, which can make git run commands later",
    });
    return;
  }
  const reads = read.options.some(
    (option) =>
      option.name.startsWith("--get") || option.name.startsWith("--unset") || ["-l", "--list", "--remove-section"].includes(option.name),
  );
  const key =
    first === "set"
      ? second
      : reads || second === undefined || ["get", "unset", "list", "remove-section"].includes(first ?? "")
        ? undefined
        : first;
  if (key !== undefined && !gitConfigIsHarmless(key.toLowerCase())) {
    effects.findings.push({ kind: "dangerous", reason: `git config sets ${key}, which can make git run commands later` });
  }
}

function gitConfigIsHarmless(key: string): boolean {
  return gitHarmlessConfig.has(key) || gitHarmlessSections.some((section) => key.startsWith(section));
}

/** One `git -c KEY=VALUE`: an alias is kept for the sub-command, a command is judged, anything else but harmless keys asks. */
export function gitConfigOption(word: ShellWord | undefined, aliases: Map<string, string>, effects: ProgramEffects): void {
  if (!word) return;
  if (!word.literal) {
    effects.findings.push({ kind: "unknown", reason: `git -c sets configuration only known at run time ("${word.text}")` });
    return;
  }
  const equals = word.text.indexOf("=");
  // Section and key names are case-insensitive: `alias.X` defines `git x`.
  const key = (equals === -1 ? word.text : word.text.slice(0, equals)).toLowerCase();
  const value = equals === -1 ? "" : word.text.slice(equals + 1);
  if (key.startsWith("alias.")) aliases.set(key.slice("alias.".length), value);
  else if (gitCommandConfig.has(key) || key.startsWith("pager.")) effects.scripts.push({ text: value, via: `git -c ${key}` });
  else if (!gitConfigIsHarmless(key))
    effects.findings.push({
      kind: "unknown",
      reason: `git -c ${key} can make git run commands or read other files, which cannot be judged`,
    });
}
