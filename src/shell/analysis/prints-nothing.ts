import type { ShellWord } from "../shell-syntax.js";
import { dropReservedWords } from "./drop-reserved-words.js";
import { silentPrograms } from "./printers.js";

/** `: > f`, `> f`, `true > f`, `cat /dev/null > f`, `exec > f`: a truncating redirection then only empties its file. */
export function printsNothing(all: readonly ShellWord[]): boolean {
  const [head, ...args] = dropReservedWords(all);
  if (!head) return true;
  if (!head.literal) return false;
  if (silentPrograms.has(head.text)) return true;
  switch (head.text) {
    case "exec":
      return args.length === 0;
    case "cat":
      return args.length > 0 && args.every((arg) => arg.text === "/dev/null");
    case "echo":
      return args[0]?.text === "-n" && args.slice(1).every((arg) => arg.text === "");
    case "printf":
      return args[0]?.text === "";
    default:
      return false;
  }
}
