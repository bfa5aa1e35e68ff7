import type { ShellWord } from "../shell-syntax.js";

/** How a program reads its options: enough to tell options, their values and positionals apart. */
export interface OptionGrammar {
  /** Short options that take a value, glued (`-Izstd`) or as the next word. */
  shortValues?: string;
  /** Long options that take the next word as their value unless written `--name=value`. */
  longValues?: readonly string[];
  /** Long names an unambiguous prefix stands for: getopt_long, git and zip complete `--rem` to `--remove-files`. Most dangerous first. */
  completes?: readonly string[];
  /** Options of their own that are prefixes of a completed name (tar's `--checkpoint`). */
  exact?: readonly string[];
  /** tar's old style: a first word without a dash is a cluster of short options whose values follow in order. */
  oldStyle?: boolean;
  /** Single-dash options of several letters that take a value (zip's `-TT`). */
  multiLetter?: readonly string[];
  /** Single-dash words are whole switches, not letter clusters (7-Zip's `-sdel`). */
  wordSwitches?: boolean;
}

interface ReadOption {
  /** `-x` for a short option, the completed `--name` for a long one. */
  name: string;
  value: ShellWord | null;
}

export interface ReadArguments {
  options: ReadOption[];
  positionals: ShellWord[];
  /** A `--` ended the options. */
  dashes: boolean;
  /** The first word only known at run time that could expand to options (`tar $FLAGS …`). */
  dynamic: ShellWord | null;
}

/** Reads a program's words as its option parser would, in one pass. */
export function readArguments(args: readonly ShellWord[], grammar: OptionGrammar): ReadArguments {
  const read: ReadArguments = { options: [], positionals: [], dashes: false, dynamic: null };
  for (let index = 0; index < args.length; index++) {
    const word = args[index] as ShellWord;
    const text = word.text;
    if (read.dashes) {
      read.positionals.push(word);
      continue;
    }
    if (mayBeOptions(word)) read.dynamic ??= word;
    if (text === "--") read.dashes = true;
    else if (index === 0 && grammar.oldStyle && word.literal && /^[A-Za-z]+$/.test(text))
      index = readCluster(args, index, 0, grammar, read);
    else if (!text.startsWith("-") || text === "-") read.positionals.push(word);
    else if (text.startsWith("--")) index = readLong(args, index, grammar, read);
    else if (grammar.wordSwitches) read.options.push({ name: text, value: null });
    else index = readShort(args, index, grammar, read);
  }
  return read;
}

/** A word only known at run time that could become options: `$FLAGS`, `"$X"`, `-$Y`; `--name=$X` still names its option. */
function mayBeOptions(word: ShellWord): boolean {
  if (word.literal) return false;
  if (!/[$`]/.test(word.text)) return /^[-{]/.test(word.text); // only brace expansion: `src/{a,b}` stays paths
  const equals = word.text.indexOf("=");
  const name = equals === -1 ? word.text : word.text.slice(0, equals);
  return !word.text.startsWith("-") || /[$`{]/.test(name);
}

function readLong(args: readonly ShellWord[], index: number, grammar: OptionGrammar, read: ReadArguments): number {
  const word = args[index] as ShellWord;
  const equals = word.text.indexOf("=");
  const name = completeName(equals === -1 ? word.text : word.text.slice(0, equals), grammar);
  if (equals !== -1) read.options.push({ name, value: { ...word, text: word.text.slice(equals + 1) } });
  else if (grammar.longValues?.includes(name)) read.options.push({ name, value: args[++index] ?? null });
  else read.options.push({ name, value: null });
  return index;
}

function completeName(written: string, grammar: OptionGrammar): string {
  if (written.length <= 2 || grammar.exact?.includes(written)) return written;
  return grammar.completes?.find((name) => name.startsWith(written)) ?? written;
}

function readShort(args: readonly ShellWord[], index: number, grammar: OptionGrammar, read: ReadArguments): number {
  const word = args[index] as ShellWord;
  const multi = grammar.multiLetter?.find((name) => word.text.startsWith(name));
  if (!multi) return readCluster(args, index, 1, grammar, read);
  const rest = word.text.slice(multi.length);
  if (rest === "") read.options.push({ name: multi, value: args[++index] ?? null });
  else read.options.push({ name: multi, value: { ...word, text: rest.startsWith("=") ? rest.slice(1) : rest } });
  return index;
}

/** `-czf out.tgz`: letters from `start`; a value-taking letter takes the rest of the word, or the next word (tar's old style: each in turn). */
function readCluster(args: readonly ShellWord[], index: number, start: number, grammar: OptionGrammar, read: ReadArguments): number {
  const word = args[index] as ShellWord;
  let next = index + 1;
  for (let at = start; at < word.text.length; at++) {
    const letter = word.text[at] as string;
    if (!grammar.shortValues?.includes(letter)) {
      read.options.push({ name: `-${letter}`, value: null });
      continue;
    }
    const glued = start === 0 ? "" : word.text.slice(at + 1);
    read.options.push({ name: `-${letter}`, value: glued === "" ? (args[next++] ?? null) : { ...word, text: glued } });
    if (start !== 0) break;
  }
  return next - 1;
}

export function has(read: ReadArguments, ...names: string[]): boolean {
  return read.options.some((option) => names.includes(option.name));
}
