import { readFileSync } from "node:fs";

/**
 * When a process started, from /proc (field 22, in clock ticks since boot), or null when it is
 * gone: a pid with its start names one process, so a pid reused after a death is not taken for it.
 */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Counted after the command name's closing parenthesis (the name may hold spaces).
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}
