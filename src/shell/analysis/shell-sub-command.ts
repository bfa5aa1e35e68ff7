import type { ShellFinding } from "./shell-finding.js";

export interface ShellSubCommand {
  /** Its words from the program on (a wrapper's include the wrapped command), joined by single spaces: what rule patterns match. */
  text: string;
  /** The program's basename; "" for bare assignments and names only known at run time. */
  program: string;
  /** Runs nothing of its own beyond the next sub-command (`env`, `timeout`, `FOO=1`, `sh -c`, a `for` header). */
  wrapper: boolean;
  findings: ShellFinding[];
}

export interface ShellRedirectFinding extends ShellFinding {
  /** The sub-command the redirection belongs to. */
  command: string;
}
