import type { ShellWord } from "../shell-syntax.js";
import type { CopierRules } from "./copiers.js";
import { optionsUnknown, runsCommandLine, type ProgramEffects } from "./program-effects.js";
import { has, readArguments } from "./read-arguments.js";
import { deleteTool } from "./shell-finding.js";

export function copierEffects(program: string, rules: CopierRules, args: readonly ShellWord[], effects: ProgramEffects): void {
  const read = readArguments(args, rules.grammar);
  const dryRun = rules.dryRun !== undefined && has(read, ...rules.dryRun);
  for (const option of read.options) {
    const deleted = rules.deletes.get(option.name);
    if (deleted && !dryRun)
      effects.findings.push({ kind: "permanent_delete", reason: `${program} ${option.name} permanently ${deleted}; ${deleteTool}` });
    const prefix = rules.runs.get(option.name);
    if (prefix === undefined || !option.value?.text.startsWith(prefix)) continue; // `--checkpoint-action=dot` runs nothing
    runsCommandLine(effects, { ...option.value, text: option.value.text.slice(prefix.length) }, `${program} ${option.name}`);
  }
  if (read.dynamic) effects.findings.push(optionsUnknown(program, read.dynamic));
}
