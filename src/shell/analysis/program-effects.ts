import type { ShellWord } from "../shell-syntax.js";
import type { ShellFinding } from "./shell-finding.js";

/** What a program's own words reveal, beyond its paths, the network and danger (SPEC F4, S11). */
export interface ProgramEffects {
  findings: ShellFinding[];
  /** Command lines it runs (`tar --to-command='…'`, a `git -c alias.x='!…'`): judged as sub-commands. */
  scripts: Array<{ text: string; via: string }>;
  /** Commands it runs from its own words (`git bisect run make test`): judged as sub-commands. */
  commands: ShellWord[][];
}

export function discards(effects: ProgramEffects, what: string): void {
  effects.findings.push({ kind: "destructive", reason: `${what}, which no trash keeps` });
}

export function runsCommandLine(effects: ProgramEffects, word: ShellWord | null | undefined, via: string): void {
  if (!word) return;
  if (word.literal) effects.scripts.push({ text: word.text, via });
  else effects.findings.push({ kind: "unknown", reason: `${via} runs a command line only known at run time` });
}

export function optionsUnknown(program: string, word: ShellWord): ShellFinding {
  return { kind: "unknown", reason: `${program} is given options only known at run time ("${word.text}")` };
}
