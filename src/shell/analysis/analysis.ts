import path from "node:path";
import {
  codeVariablePrefixes,
  codeVariables,
  commandVariables,
  dangerousPrefixes,
  dangerousPrograms,
  declarers,
  deleteTool,
  patternFirst,
  patternOptions,
  permanentDeleters,
  printers,
  programEffects,
  shells,
  shellValueOptions,
  subcommandValueOptions,
  wrappers,
  type ProgramEffects,
  type ShellFinding,
  type WrapperSpec,
} from "../shell-commands.js";
import { parseShell, type ShellRedirection, type ShellWord, type SimpleCommand } from "../shell-syntax.js";
import { dropReservedWords } from "./drop-reserved-words.js";
import { expandBraceWord } from "./expand-brace-word.js";
import { isHarmlessDevice } from "./harmless-devices.js";
import { joinedCommandLine, joinWords } from "./join-words.js";
import { markReplaced, xargsReplaceString } from "./mark-replaced.js";
import { fileChangeReason, wrapperFileChangeReason } from "./file-keepers.js";
import { firstPositional, networkReason } from "./network-reason.js";
import { printsNothing } from "./prints-nothing.js";
import { programFileFinding } from "./program-file-finding.js";
import { readOptions } from "./read-options.js";
import type { ShellRedirectFinding, ShellSubCommand } from "./shell-sub-command.js";

/** `sh -c "sh -c '…'"` nesting beyond this is refused as unjudgeable. */
const maxScriptNesting = 8;
/** Wrappers around wrappers (`nohup nice timeout 5 env …`) beyond this are refused as unjudgeable. */
const maxWrapperNesting = 24;
const assignment = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=/;
/** Redirections that empty their file first. */
const truncating: ReadonlySet<string> = new Set([">", ">|", "&>", ">&"]);

export class Analysis {
  readonly commands: ShellSubCommand[] = [];
  readonly redirections: ShellRedirectFinding[] = [];
  /** Redirections that replace or rewrite a file in place (`> f`, `&> f`, `<> f`); appends keep what is there. */
  readonly overwrites: ShellRedirectFinding[] = [];
  network = false;

  private readonly workspaceDir: string;
  private readonly workspacePrefix: string;

  constructor(workspaceDir: string) {
    this.workspaceDir = path.resolve(workspaceDir);
    this.workspacePrefix = this.workspaceDir === "/" ? "/" : `${this.workspaceDir}/`;
  }

  /** For a path already resolved by node:path (normalized, absolute): a prefix test is exact. */
  private inside(absolute: string): boolean {
    return absolute === this.workspaceDir || absolute.startsWith(this.workspacePrefix);
  }

  simpleCommands(list: readonly SimpleCommand[], depth: number): void {
    for (const command of list) {
      if (command.redirections.length > 0) {
        const text = joinWords(command.words);
        const silent = printsNothing(command.words);
        for (const redirection of command.redirections) this.redirection(redirection, text, silent);
      }
      this.words(command.words, depth);
    }
  }

  /** `changesFiles`: why it may change an existing file; null when it is known not to, or runs nothing of its own. */
  private push(text: string, program: string, wrapper: boolean, findings: ShellFinding[], changesFiles: string | null = null): void {
    if (findings.some((finding) => finding.kind === "network")) this.network = true;
    this.commands.push({ text, program, wrapper, findings, changesFiles });
  }

  /** `silent`: the command prints nothing, so a truncating redirection only empties its file (`: > f`). */
  private redirection(redirection: ShellRedirection, command: string, silent: boolean): void {
    const { op, target } = redirection;
    const writes = op !== "<" && op !== "<&";
    const shown = `${op} ${target.text}`;
    if ((truncating.has(op) || op === "<>") && !isHarmlessDevice(target.text)) {
      const what = op === "<>" ? "opens it to be written in place" : "replaces its content";
      this.overwrites.push({ kind: "destructive", reason: `the redirection "${shown}" ${what}`, command: command || shown });
    }
    if (silent && truncating.has(op) && !isHarmlessDevice(target.text)) {
      this.redirections.push({
        kind: "destructive",
        reason: `the redirection "${shown}" empties "${target.text}", whose content no trash keeps`,
        command: command || shown,
      });
    }
    let finding = this.pathFinding(target);
    if (!finding && writes && target.expandsAtStart) finding = { kind: "unknown", reason: "" };
    if (!finding) return;
    if (finding.kind === "network") {
      this.network = true;
      finding = { kind: "network", reason: `the redirection "${shown}" opens a network connection` };
    } else if (finding.kind === "unknown") {
      finding = { kind: "unknown", reason: `the redirection "${shown}" goes to a path only known at run time` };
    } else {
      finding = { kind: "outside", reason: `the redirection "${shown}" ${writes ? "writes" : "reads"} outside the workspace` };
    }
    this.redirections.push({ ...finding, command: command || shown });
  }

  /** A nested command line: `sh -c '…'`, `eval …`, `su -c …`, `env -S …`. */
  private script(text: string, via: string, depth: number): void {
    if (depth >= maxScriptNesting) {
      const reason = "the command nests shells too deeply to check";
      this.push(text, "", false, [{ kind: "unparsed", reason }], reason);
      return;
    }
    const parsed = parseShell(text);
    if (!parsed.ok) {
      const reason = `the script given to ${via} could not be parsed: ${parsed.error}`;
      this.push(text, "", false, [{ kind: "unparsed", reason }], reason);
    } else this.simpleCommands(parsed.commands, depth + 1);
  }

  private words(all: readonly ShellWord[], depth: number, level = 0): void {
    let words = dropReservedWords(all);
    const first = words[0];
    if (!first) return;
    const text = joinWords(words);
    if (level > maxWrapperNesting) {
      const reason = "the command nests wrappers too deeply to check";
      this.push(text, "", false, [{ kind: "unparsed", reason }], reason);
      return;
    }
    if (first.literal && (first.text === "for" || first.text === "select")) {
      // `for NAME in WORDS`: a loop header; its words are only paths
      const inIndex = words.findIndex((word) => word.literal && word.text === "in");
      this.push(text, first.text, true, inIndex === -1 ? [] : this.pathFindings(first.text, words.slice(inIndex + 1)));
      return;
    }
    if (assignment.test(first.text) && !first.expandsAtStart) {
      let count = 0;
      const findings: ShellFinding[] = [];
      while (count < words.length && assignment.test((words[count] as ShellWord).text)) {
        findings.push(...this.valueFindings(words[count] as ShellWord), ...this.variableFindings(words[count] as ShellWord, depth));
        count++;
      }
      this.push(text, "", true, findings);
      this.words(words.slice(count), depth, level + 1);
      return;
    }
    if (first.braceExpansion) {
      const expanded = expandBraceWord(first);
      if (expanded) words = [...expanded, ...words.slice(1)];
    }
    const head = words[0] as ShellWord;
    const args = words.slice(1);
    if (!head.literal) {
      const unknown = `the program "${head.text}" is only known at run time`;
      this.push(text, "", false, [{ kind: "unknown", reason: unknown }, ...this.pathFindings("", args)], unknown);
      return;
    }
    const program = path.basename(head.text);
    const file = programFileFinding(head.text);
    if (file) this.push(text, program, false, [file], file.reason);
    const wrapper = wrappers.get(program);
    if (wrapper) return this.wrapper(program, wrapper, args, text, depth, level);
    if (shells.has(program)) return this.shell(program, args, text, depth);
    if (program === "eval") {
      const literal = args.every((word) => word.literal);
      this.push(text, program, true, literal ? [] : [{ kind: "unknown", reason: "eval runs text only known at run time" }]);
      if (literal && args.length > 0) this.script(joinWords(args), "eval", depth);
      return;
    }
    if (program === "su") return this.su(args, text, depth);
    if (program === "source" || program === ".") return this.source(program, args, text);
    if (program === "alias") return this.alias(args, text, depth);
    if (program === "trap") return this.trap(args, text, depth);
    const effects = programEffects(program, args);
    const findings = [...this.programFindings(program, args), ...effects.findings];
    if (declarers.has(program)) for (const arg of args) if (assignment.test(arg.text)) findings.push(...this.variableFindings(arg, depth));
    this.push(text, program, false, findings, fileChangeReason(program, args));
    this.follow(effects, depth, level);
    if (program === "find") {
      // `find … -exec CMD {} ;` runs CMD: a sub-command of its own, where `{}` is a found path
      for (const [index, arg] of args.entries()) {
        if (!["-exec", "-execdir", "-ok", "-okdir"].includes(arg.text)) continue;
        const rest = args.slice(index + 1);
        const end = rest.findIndex((word) => word.text === ";" || word.text === "+");
        this.words(markReplaced(end === -1 ? rest : rest.slice(0, end), "{}"), depth, level + 1);
      }
    }
  }

  /** What a program's options run (`tar --to-command`, `git bisect run`), as sub-commands of their own. */
  private follow(effects: ProgramEffects, depth: number, level: number): void {
    for (const script of effects.scripts) this.script(script.text, script.via, depth);
    for (const words of effects.commands) this.words(words, depth, level + 1);
  }

  /** `. ./s.sh`, `source s.sh`: a script file, which the gateway cannot read (SPEC S11). */
  private source(program: string, args: readonly ShellWord[], text: string): void {
    const file = args[0];
    const findings = this.pathFindings(program, args);
    if (file)
      findings.unshift({ kind: "unknown", reason: `${program} runs the script file "${file.text}", whose commands cannot be judged` });
    this.push(text, program, false, findings, `${program} runs a script file, whose commands cannot be judged`);
  }

  /** `alias name='…'`: what it runs is judged as if it ran, since later lines may use it. */
  private alias(args: readonly ShellWord[], text: string, depth: number): void {
    const findings: ShellFinding[] = [];
    const bodies: string[] = [];
    for (const arg of args) {
      const equals = arg.text.indexOf("=");
      if (equals <= 0 || arg.text.startsWith("-")) continue; // `alias ll` and `alias -p` only print
      if (arg.literal) bodies.push(arg.text.slice(equals + 1));
      else findings.push({ kind: "unknown", reason: `alias defines a command only known at run time ("${arg.text}")` });
    }
    this.push(text, "alias", false, findings);
    for (const body of bodies) this.script(body, "alias", depth);
  }

  /** `trap '…' EXIT`: the handler is judged as if it ran, since it runs when the signal comes or the shell exits. */
  private trap(args: readonly ShellWord[], text: string, depth: number): void {
    const start = args[0]?.text === "--" ? 1 : 0;
    const handler = args[start];
    // `trap -p`, `trap - INT` and `trap INT` (one word: a signal to reset) set no handler
    const sets = handler !== undefined && args.length - start >= 2 && !(start === 0 && handler.text.startsWith("-"));
    this.push(
      text,
      "trap",
      false,
      sets && !handler.literal ? [{ kind: "unknown", reason: "trap sets a handler only known at run time" }] : [],
    );
    if (sets && handler.literal) this.script(handler.text, "trap", depth);
  }

  /** `NAME=value` where NAME makes the shell, git or every program run code later (SPEC S11). */
  private variableFindings(word: ShellWord, depth: number): ShellFinding[] {
    const equals = word.text.indexOf("=");
    let name = word.text.slice(0, equals);
    if (name.includes("[")) name = name.slice(0, name.indexOf("["));
    if (name.endsWith("+")) name = name.slice(0, -1);
    const value = word.text.slice(equals + 1);
    if (commandVariables.has(name)) {
      if (!word.literal) return [{ kind: "unknown", reason: `${name} is set to a command only known at run time` }];
      this.script(value, name, depth);
      return [];
    }
    const code = codeVariables.get(name) ?? codeVariablePrefixes.find(([prefix]) => name.startsWith(prefix))?.[1];
    if (code) return [{ kind: "unknown", reason: `${name}=… ${code}, which cannot be judged` }];
    if (/^PS[0-4]$/.test(name) && /[$`]/.test(value))
      return [{ kind: "unknown", reason: `${name} runs the substitutions in it whenever bash shows it, which cannot be judged` }];
    if (name === "PATH" && this.pathFindsFiles(value))
      return [{ kind: "unknown", reason: `PATH=${value} makes program names find files whose commands cannot be judged` }];
    return [];
  }

  /** A PATH with an entry other than itself and installed folders: `.`, a relative or workspace folder, `$HOME/bin`. */
  private pathFindsFiles(value: string): boolean {
    for (const entry of value.split(":")) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell text `${PATH}`, literally
      if (entry === "$PATH" || entry === "${PATH}") continue;
      if (!entry.startsWith("/") || /[$`]/.test(entry) || this.inside(path.resolve(entry))) return true;
    }
    return false;
  }

  private wrapper(program: string, spec: WrapperSpec, args: readonly ShellWord[], text: string, depth: number, level: number): void {
    const findings: ShellFinding[] = spec.dangerous ? [{ kind: "dangerous", reason: `${program} ${spec.dangerous}` }] : [];
    const options = readOptions(args, spec.valueOptions, spec.scriptOptions ?? [], program === "env");
    for (const value of options.values) {
      const finding = this.pathFinding(value);
      if (finding) findings.push(finding);
    }
    let index = options.next;
    if (spec.assignments) {
      // env takes any word with a `=` as an assignment, `BASH_FUNC_f%%=…` included
      while (index < args.length && (args[index] as ShellWord).text.indexOf("=") > 0) {
        const word = args[index++] as ShellWord;
        findings.push(...this.valueFindings(word), ...this.variableFindings(word, depth));
      }
    }
    for (let positional = 0; positional < (spec.positionals ?? 0) && index < args.length; positional++) {
      const finding = this.pathFinding(args[index++] as ShellWord);
      if (finding) findings.push(finding);
    }
    // `flock FILE -c '…'` and `watch '…'` run a command line; `env -S '…'` too
    const commandOption = spec.commandOptions?.includes(args[index]?.text ?? "") ? (args[index] as ShellWord).text : null;
    let script = commandOption ? (args[index + 1] ?? null) : options.script;
    if (spec.shellJoined && index < args.length) script = joinedCommandLine(args.slice(index));
    if (script && !script.literal) findings.push({ kind: "unknown", reason: `${program} runs a command line only known at run time` });
    this.push(text, program, true, findings, wrapperFileChangeReason(program, args.slice(0, options.next)));
    if (spec.lookupOptions && options.flags.some((flag) => spec.lookupOptions?.includes(flag))) return; // `command -v rm` runs nothing
    if (script) {
      if (script.literal)
        this.script(script.text, commandOption ? `${program} ${commandOption}` : spec.shellJoined ? program : `${program} -S`, depth);
      return;
    }
    const wrapped = args.slice(index);
    this.words(program === "xargs" ? markReplaced(wrapped, xargsReplaceString(args.slice(0, options.next))) : wrapped, depth, level + 1);
  }

  private shell(program: string, args: readonly ShellWord[], text: string, depth: number): void {
    let index = 0;
    let command = false;
    let stdin = false;
    while (index < args.length) {
      const option = (args[index] as ShellWord).text;
      if (option === "--" || option === "-") {
        index++;
        break;
      }
      if (shellValueOptions.has(option)) index += 2;
      else if (option.startsWith("--")) index++;
      else if (/^[-+][A-Za-z]+$/.test(option)) {
        if (option.startsWith("-") && option.includes("c")) command = true;
        if (option.startsWith("-") && option.includes("s")) stdin = true;
        index++;
      } else break;
    }
    if (!command) {
      // `bash s.sh` runs a file the gateway cannot read; `echo 'rm x' | sh` runs what it reads (SPEC S11)
      const findings = this.pathFindings(program, args);
      const file = args[index];
      if (stdin || !file)
        findings.push({ kind: "unknown", reason: `${program} runs commands read from its input, which cannot be judged` });
      else findings.unshift({ kind: "unknown", reason: `${program} runs the script file "${file.text}", whose commands cannot be judged` });
      this.push(text, program, false, findings, `${program} runs commands that cannot be judged`);
      return;
    }
    const script = args[index];
    this.push(
      text,
      program,
      true,
      script && !script.literal ? [{ kind: "unknown", reason: `${program} -c runs a command line only known at run time` }] : [],
    );
    if (script?.literal) this.script(script.text, `${program} -c`, depth);
  }

  private su(args: readonly ShellWord[], text: string, depth: number): void {
    const findings: ShellFinding[] = [{ kind: "dangerous", reason: `su ${dangerousPrograms.get("su")}` }];
    let script: ShellWord | undefined;
    for (const [index, arg] of args.entries()) {
      if (arg.text === "-c" || arg.text === "--command") script = args[index + 1];
      else if (arg.text.startsWith("--command=")) script = { ...arg, text: arg.text.slice("--command=".length) };
    }
    if (script && !script.literal) findings.push({ kind: "unknown", reason: "su -c runs a command line only known at run time" });
    this.push(text, "su", true, findings);
    if (script?.literal) this.script(script.text, "su -c", depth);
  }

  private programFindings(program: string, args: readonly ShellWord[]): ShellFinding[] {
    const findings: ShellFinding[] = [];
    const subcommand = firstPositional(args, subcommandValueOptions.get(program));
    if (permanentDeleters.has(program))
      findings.push({ kind: "permanent_delete", reason: `${program} deletes permanently; ${deleteTool}` });
    if (program === "find" && args.some((arg) => arg.text === "-delete"))
      findings.push({ kind: "permanent_delete", reason: `find -delete deletes permanently; ${deleteTool}` });
    const network = networkReason(program, subcommand, args);
    if (network) findings.push({ kind: "network", reason: network });
    const dangerous = dangerousPrograms.get(program) ?? dangerousPrefixes.find(([prefix]) => program.startsWith(prefix))?.[1];
    if (dangerous) findings.push({ kind: "dangerous", reason: `${program} ${dangerous}` });
    if ((program === "cd" || program === "pushd") && args.length === 0)
      findings.push({ kind: "outside", reason: `${program} without a directory goes to the home directory, outside the workspace` });
    else if (
      (program === "cd" || program === "pushd") &&
      args.some((arg) => arg.text === "-" || (!arg.literal && !arg.text.startsWith("-")))
    ) {
      findings.push({ kind: "unknown", reason: `${program} goes to a directory only known at run time` });
    }
    if (!printers.has(program)) findings.push(...this.pathFindings(program, args));
    return findings;
  }

  /** Arguments that name paths outside the workspace; a pattern-first program's pattern is skipped. */
  private pathFindings(program: string, args: readonly ShellWord[]): ShellFinding[] {
    const findings: ShellFinding[] = [];
    const valueOptions = patternFirst.get(program);
    let patternPending =
      valueOptions !== undefined && !args.some((arg) => patternOptions.has(arg.text) || /^--(?:regexp|file|expression)=/.test(arg.text));
    let optionsEnded = false;
    for (let index = 0; index < args.length; index++) {
      const arg = args[index] as ShellWord;
      if (!optionsEnded && arg.text === "--") {
        optionsEnded = true;
        continue;
      }
      if (!optionsEnded && arg.text.startsWith("-") && arg.text.length > 1) {
        if (valueOptions?.has(arg.text)) index++;
        findings.push(...this.valueFindings(arg));
        continue;
      }
      if (patternPending) {
        patternPending = false;
        continue;
      }
      const finding = this.pathFinding(arg);
      if (finding) findings.push(finding);
      else if (/^[A-Za-z_][A-Za-z0-9_.-]*=/.test(arg.text)) findings.push(...this.valueFindings(arg));
    }
    return findings;
  }

  /** The value of `NAME=value` or `--option=value`, judged as a path. */
  private valueFindings(word: ShellWord): ShellFinding[] {
    const equals = word.text.indexOf("=");
    if (equals === -1) return [];
    const value = word.text.slice(equals + 1);
    const finding = this.pathFinding({
      ...word,
      text: value,
      tilde: value.startsWith("~"),
      expandsAtStart: value.startsWith("$") || value.startsWith("`"),
    });
    return finding ? [finding] : [];
  }

  /** A word used as a path: outside the workspace, a network device, or only known at run time. */
  private pathFinding(word: ShellWord): ShellFinding | null {
    const text = word.text;
    if (word.tilde) return { kind: "outside", reason: `"${text}" is in the home directory, outside the workspace` };
    let known = text;
    if (!word.literal) {
      if (word.expandsAtStart) {
        if (/^\$\{?HOME\}?(?:\/|$)/.test(text))
          return { kind: "outside", reason: `"${text}" is in the home directory, outside the workspace` };
        if (/^\$\{?PWD\}?(?:\/|$)/.test(text)) known = `.${text.replace(/^\$\{?PWD\}?/, "")}`;
        else return text.includes("/") ? { kind: "unknown", reason: `the path "${text}" is only known at run time` } : null;
      }
      const cut = known.search(/[$`]/);
      if (cut !== -1) known = known.slice(0, cut);
    }
    if (known.includes("://")) return null;
    if (known.startsWith("/")) {
      if (/^\/dev\/(?:tcp|udp)\//.test(known)) return { kind: "network", reason: `"${text}" opens a network connection` };
      if (isHarmlessDevice(known)) return null;
      return this.inside(path.resolve(known)) ? null : { kind: "outside", reason: `"${text}" is outside the workspace` };
    }
    if (/(?:^|\/)\.\.(?:\/|$)/.test(known) && !this.inside(path.resolve(this.workspaceDir, known))) {
      return { kind: "outside", reason: `"${text}" is outside the workspace` };
    }
    return null;
  }
}
