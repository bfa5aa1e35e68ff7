import type { ShellFinding } from "./shell-finding.js";

export interface ShellSubCommand {
  /** Its words from the program on (a wrapper's include the wrapped command), joined by single spaces: what rule patterns match. */
  text: string;
  /** The program's basename; "" for bare assignments and names only known at run time. */
  program: string;
  /** Runs nothing of its own beyond the next sub-command (`env`, `timeout`, `FOO=1`, `sh -c`, a `for` header). */
  wrapper: boolean;
  findings: ShellFinding[];
  /**
   * Why it may change an existing file, or null when it is known not to (`file-keepers.ts`); a
   * wrapper's command is a sub-command of its own. The gateway asks before a background command
   * that may, since nothing records its changes (SPEC S11, X7).
   */
  changesFiles: string | null;
}

export interface ShellRedirectFinding extends ShellFinding {
  /** The sub-command the redirection belongs to. */
  command: string;
}
