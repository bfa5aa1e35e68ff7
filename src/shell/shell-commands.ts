import type { ShellWord } from "./shell-syntax.js";
import { copierEffects } from "./analysis/copier-effects.js";
import { copiers } from "./analysis/copiers.js";
import { codeLoadingOptions, unseenCommands } from "./analysis/dangerous-programs.js";
import { gitEffects } from "./analysis/git-effects.js";
import { discards, runsCommandLine, type ProgramEffects } from "./analysis/program-effects.js";
import { readArguments } from "./analysis/read-arguments.js";

/**
 * What the gateway knows about programs run from a shell (SPEC S2, S11, F4):
 * which only wrap another command, which delete permanently, which reach the
 * network, which are dangerous, and which variables make the shell or git run
 * code later. Names are compared after `path.basename`, so `/bin/rm` is `rm`.
 * Unknown programs are ordinary: only their path arguments are judged.
 * `programEffects` reads the options of programs that hide deletes, discarded
 * work or other commands in them (git, tar, rsync, zip, truncate, …).
 */

export { codeVariablePrefixes, codeVariables, commandVariables } from "./analysis/code-variables.js";
export { dangerousPrefixes, dangerousPrograms, permanentDeleters } from "./analysis/dangerous-programs.js";
export { subcommandValueOptions } from "./analysis/network-programs.js";
export { patternFirst, patternOptions } from "./analysis/pattern-first.js";
export { printers } from "./analysis/printers.js";
export type { ProgramEffects } from "./analysis/program-effects.js";
export { deleteTool, type ShellFinding } from "./analysis/shell-finding.js";
export { declarers, shells, shellValueOptions } from "./analysis/shells.js";
export { wrappers, type WrapperSpec } from "./analysis/wrappers.js";

/** What `program` does through its own words (SPEC F4, S11): deletes, discarded work, emptied files, commands it runs. */
export function programEffects(program: string, args: readonly ShellWord[]): ProgramEffects {
  const effects: ProgramEffects = { findings: [], scripts: [], commands: [] };
  const copier = copiers.get(program);
  if (copier) copierEffects(program, copier, args, effects);
  else if (program === "git") gitEffects(args, effects);
  else if (program === "truncate") discards(effects, "truncate cuts files to a size, losing their content");
  else if ((program === "cp" || program === "install") && copiesNothingOver(args))
    discards(effects, `${program} /dev/null empties the file it copies over`);
  else if (program === "script") scriptEffects(args, effects);
  const unseen = unseenCommands.get(program);
  if (unseen) effects.findings.push({ kind: "unknown", reason: `${program} ${unseen}, which cannot be judged` });
  const loading = codeLoadingOptions.get(program);
  if (loading && args.some((arg) => /^-[A-Za-z]+$/.test(arg.text) && arg.text.includes(loading[0]))) {
    effects.findings.push({ kind: "unknown", reason: `${program} -${loading[0]} ${loading[1]}, which cannot be judged` });
  }
  return effects;
}

/** `cp /dev/null f`: an empty source, not the destination (the last word). */
function copiesNothingOver(args: readonly ShellWord[]): boolean {
  for (let index = 0; index < args.length - 1; index++) {
    const text = (args[index] as ShellWord).text;
    if (text === "/dev/null" || text === "/dev/zero") return true;
  }
  return false;
}

/** util-linux `script -c CMD` runs CMD; without it, an interactive shell that reads its input. */
function scriptEffects(args: readonly ShellWord[], effects: ProgramEffects): void {
  const read = readArguments(args, {
    shortValues: "cEoTBIOm",
    longValues: ["--command", "--echo", "--output-limit", "--log-timing", "--log-io", "--log-in", "--log-out", "--logging-format"],
    completes: ["--command"],
  });
  const command = read.options.find((option) => option.name === "-c" || option.name === "--command");
  if (command) runsCommandLine(effects, command.value, "script -c");
  else effects.findings.push({ kind: "unknown", reason: "script runs a shell that reads commands from its input, which cannot be judged" });
}
