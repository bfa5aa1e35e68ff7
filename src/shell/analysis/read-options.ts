import type { ShellWord } from "../shell-syntax.js";

export interface Options {
  /** Index of the first word after the options. */
  next: number;
  flags: string[];
  /** Values of value-taking options. */
  values: ShellWord[];
  /** The value of a script option (`env -S '…'`). */
  script: ShellWord | null;
}

/** Skips a wrapper's options; a short cluster (`-Eu root`, `-n5`) takes its value glued or from the next word. */
export function readOptions(
  args: readonly ShellWord[],
  valueOptions: readonly string[],
  scriptOptions: readonly string[],
  dashIsFlag: boolean,
): Options {
  const options: Options = { next: 0, flags: [], values: [], script: null };
  let index = 0;
  while (index < args.length) {
    const word = args[index] as ShellWord;
    const text = word.text;
    if (text === "--") {
      index++;
      break;
    }
    if (text === "-" && dashIsFlag) {
      index++;
      continue;
    }
    if (!text.startsWith("-") || text.length < 2) break;
    options.flags.push(text);
    index++;
    if (text.startsWith("--")) {
      const equals = text.indexOf("=");
      const name = equals === -1 ? text : text.slice(0, equals);
      const glued = equals === -1 ? null : { ...word, text: text.slice(equals + 1) };
      const value = glued ?? (valueOptions.includes(name) || scriptOptions.includes(name) ? (args[index++] ?? null) : null);
      if (value && scriptOptions.includes(name)) options.script = value;
      else if (value) options.values.push(value);
      continue;
    }
    for (let at = 1; at < text.length; at++) {
      const name = `-${text[at]}`;
      const isScript = scriptOptions.includes(name);
      if (!isScript && !valueOptions.includes(name)) continue;
      const value = at + 1 < text.length ? { ...word, text: text.slice(at + 1) } : (args[index++] ?? null);
      if (value && isScript) options.script = value;
      else if (value) options.values.push(value);
      break;
    }
  }
  options.next = index;
  return options;
}
