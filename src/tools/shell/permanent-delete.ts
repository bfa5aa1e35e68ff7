import path from "node:path";
import { parse, type ParseEntry } from "shell-quote";

/**
 * Finds a permanent delete in a shell command line (SPEC F4): `rm`, `unlink`,
 * `shred`, `find -delete` or `-exec rm`, `git clean`, however it is wrapped:
 * env assignments, `sudo`, `env`, `xargs`, `sh -c '…'`, `$(…)`, pipes and
 * lists. The line is parsed into words and operators, never matched as a
 * substring. Answers the reason, or null.
 */
export function findPermanentDelete(commandLine: string, depth = 0): string | null {
  if (depth > 5) return "the command nests shells too deeply to check";
  let entries: ParseEntry[];
  try {
    entries = parse(commandLine, (name) => `$${name}`);
  } catch {
    return "the command line could not be parsed";
  }
  for (const words of splitCommands(entries)) {
    const reason = checkCommand(words, depth);
    if (reason) return reason;
  }
  return null;
}

const redirections = new Set([">", ">>", "<", ">&", "<&", "<(", ">|", "&>", "&>>"]);

function splitCommands(entries: ParseEntry[]): string[][] {
  const commands: string[][] = [[]];
  let skipNext = false;
  for (const entry of entries) {
    if (skipNext) {
      skipNext = false;
      continue;
    }
    if (typeof entry === "string") {
      (commands[commands.length - 1] as string[]).push(entry);
    } else if ("op" in entry && entry.op === "glob") {
      (commands[commands.length - 1] as string[]).push((entry as { pattern: string }).pattern);
    } else if ("op" in entry && redirections.has(entry.op)) {
      skipNext = true;
    } else if ("op" in entry) {
      commands.push([]);
    }
  }
  return commands.filter((words) => words.length > 0 && !(words.length === 1 && words[0] === "$"));
}

const wrappers = new Set(["sudo", "doas", "env", "command", "builtin", "exec", "nohup", "time", "nice", "ionice", "timeout", "stdbuf", "xargs", "busybox"]);
const shells = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash"]);
const deleters = new Set(["rm", "unlink", "shred", "srm", "wipe"]);

function checkCommand(original: string[], depth: number): string | null {
  let words = original.filter((word) => word !== "$");
  for (;;) {
    while (words[0] !== undefined && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0])) words = words.slice(1);
    const name = path.basename(words[0] ?? "");
    if (!wrappers.has(name)) break;
    words = words.slice(1);
    // Drop the wrapper's own options and their values (timeout's duration, sudo -u user).
    while (words[0] !== undefined && (words[0].startsWith("-") || (name === "timeout" && /^\d/.test(words[0])))) {
      const option = words[0];
      words = words.slice(1);
      if ((name === "sudo" || name === "doas") && ["-u", "-g", "-C"].includes(option)) words = words.slice(1);
      if (name === "xargs" && ["-I", "-n", "-P", "-L", "-d", "-a", "-E"].includes(option)) words = words.slice(1);
    }
  }
  const name = path.basename(words[0] ?? "");
  const args = words.slice(1);
  if (deleters.has(name)) return `"${name}" deletes permanently; use the delete tool, which moves files to the trash`;
  if (name === "eval") return findPermanentDelete(args.join(" "), depth + 1);
  if (shells.has(name)) {
    const script = args.findIndex((arg) => /^-[a-z]*c[a-z]*$/.test(arg));
    if (script !== -1 && args[script + 1] !== undefined) return findPermanentDelete(args[script + 1] as string, depth + 1);
  }
  if (name === "find") {
    if (args.includes("-delete")) return '"find -delete" deletes permanently; use the delete tool';
    for (const [index, arg] of args.entries()) {
      if ((arg === "-exec" || arg === "-execdir" || arg === "-ok") && args[index + 1] !== undefined) {
        const reason = checkCommand(args.slice(index + 1), depth);
        if (reason) return reason;
      }
    }
  }
  if (name === "git" && args.includes("clean")) return '"git clean" deletes untracked files permanently; use the delete tool';
  return null;
}
