import { parseShell } from "./shell-syntax.js";
import { Analysis } from "./analysis/analysis.js";
import type { ShellRedirectFinding, ShellSubCommand } from "./analysis/shell-sub-command.js";

/**
 * Judges what a shell command line would do (SPEC S2, S11, F4), with no I/O:
 * every sub-command it runs, including those inside substitutions, subshells,
 * `sh -c` / `eval` scripts, wrappers (`sudo`, `env`, `timeout`, `xargs`,
 * `watch`, `flock -c`, `FOO=1 …`), and command lines kept to run later
 * (`alias`, `trap`, `PROMPT_COMMAND=`, `git -c alias.x=…`, `tar
 * --to-command=…`), where the wrapper and the wrapped command are both
 * sub-commands. Each gets findings: a permanent delete, lost data no trash
 * keeps, the network, a dangerous program, a path outside the workspace, or
 * something only known at run time (a variable, a script file). Paths are
 * resolved lexically against the workspace root, never on disk.
 */

export type { ShellRedirectFinding, ShellSubCommand } from "./analysis/shell-sub-command.js";

export type ShellAnalysis =
  | {
      parsed: true;
      commands: ShellSubCommand[];
      redirections: ShellRedirectFinding[];
      /** Redirections that replace a file's content or write it in place: what a background command may not do unasked. */
      overwrites: ShellRedirectFinding[];
      network: boolean;
    }
  | { parsed: false; error: string };

export function analyzeShell(commandLine: string, workspaceDir: string): ShellAnalysis {
  const parsed = parseShell(commandLine);
  if (!parsed.ok) return { parsed: false, error: parsed.error };
  const analysis = new Analysis(workspaceDir);
  analysis.simpleCommands(parsed.commands, 0);
  return {
    parsed: true,
    commands: analysis.commands,
    redirections: analysis.redirections,
    overwrites: analysis.overwrites,
    network: analysis.network,
  };
}
