import type { ShellWord } from "../shell-syntax.js";
import { networkPrograms, networkSubcommands, networkWithoutSubcommand } from "./network-programs.js";

/** The first word that is not an option (or an option's value): a program's sub-command. */
export function firstPositional(args: readonly ShellWord[], valueOptions: ReadonlySet<string> | undefined): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const text = (args[index] as ShellWord).text;
    if (!text.startsWith("-")) return text;
    if (valueOptions?.has(text)) index++;
  }
  return undefined;
}

export function networkReason(program: string, subcommand: string | undefined, args: readonly ShellWord[]): string | null {
  if (networkPrograms.has(program)) return `${program} reaches the network`;
  if (subcommand !== undefined && networkSubcommands.get(program)?.has(subcommand)) return `${program} ${subcommand} reaches the network`;
  if (subcommand === undefined && networkWithoutSubcommand.has(program)) return `${program} reaches the network`;
  if (program === "rsync" && args.some((arg) => arg.text.startsWith("rsync://") || /^[^/\s-][^/\s]*:/.test(arg.text)))
    return "rsync to or from another host reaches the network";
  if (/^python[0-9.]*$/.test(program)) {
    const module = args.findIndex((arg) => arg.text === "-m");
    const rest = module === -1 ? [] : args.slice(module + 1).map((arg) => arg.text);
    if (rest[0] === "pip" && ["install", "download"].includes(rest[1] ?? "")) return `${program} -m pip ${rest[1]} reaches the network`;
  }
  return null;
}
