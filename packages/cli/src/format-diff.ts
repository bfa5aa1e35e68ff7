import type { TerminalStyle } from "./terminal-style.js";

/** A unified diff with git's colours: headers bold, hunks cyan, removals red, additions green. */
export function formatDiff(diff: string, style: TerminalStyle): string {
  if (!style.enabled) return diff;
  return diff
    .split("\n")
    .map((line) => {
      if (
        line.startsWith("+++") ||
        line.startsWith("---") ||
        line.startsWith("diff ") ||
        line.startsWith("index ") ||
        line.startsWith("===")
      )
        return style.bold(line);
      if (line.startsWith("@@")) return style.cyan(line);
      if (line.startsWith("+")) return style.green(line);
      if (line.startsWith("-")) return style.red(line);
      if (line.startsWith("\\")) return style.dim(line);
      return line;
    })
    .join("\n");
}
