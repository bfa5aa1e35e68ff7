import { analyzeShell } from "../../shell/shell-analysis.js";

/**
 * Finds a permanent delete in a shell command line (SPEC F4, S11): `rm`,
 * `unlink`, `shred`, `find -delete` or `-exec rm`, `git clean` (also through a
 * `git -c alias.x=…`), `rsync --delete` and `--remove-source-files`, `tar
 * --remove-files`, `zip -m`, `7z -sdel`, and deletes kept to run later
 * (`alias`, `trap`, `watch`, `flock -c`, `tar --to-command`, `PROMPT_COMMAND=`),
 * however it is wrapped: env assignments, `sudo`, `env`, `xargs`, `timeout`,
 * `sh -c '…'`, `eval`, `$(…)`, backquotes, subshells, groups, pipes, lists
 * and newlines. It uses the approval gateway's shell analysis, so both see the
 * same sub-commands: `bash` refuses every permanent delete the gateway denies.
 * Answers the reason, or null. A line that cannot be parsed is not refused
 * here: the gateway asks a human about it, and their approval must mean something.
 */
export function findPermanentDelete(commandLine: string): string | null {
  // Paths do not matter here; "/" as the workspace keeps every path inside.
  const analysis = analyzeShell(commandLine, "/");
  if (!analysis.parsed) return null;
  for (const command of analysis.commands) {
    const finding = command.findings.find((candidate) => candidate.kind === "permanent_delete");
    if (finding) return finding.reason;
  }
  return null;
}
