import type { ShellWord } from "../shell-syntax.js";

/** Words holding xargs' or find's replace string (`{}`) are only known at run time: `-exec {} ;` runs a found file. */
export function markReplaced(words: readonly ShellWord[], replace: string | null): readonly ShellWord[] {
  if (!replace) return words;
  return words.map((word) =>
    word.literal && word.text.includes(replace) ? { ...word, literal: false, expandsAtStart: word.text.startsWith(replace) } : word,
  );
}

/** xargs `-I R`, `-iR`, `-i`, `--replace[=R]`: the string replaced by each input line. */
export function xargsReplaceString(options: readonly ShellWord[]): string | null {
  let replace: string | null = null;
  for (let index = 0; index < options.length; index++) {
    const text = (options[index] as ShellWord).text;
    if (text === "--replace") replace = "{}";
    else if (text.startsWith("--replace=")) replace = text.slice("--replace=".length);
    else if (text.startsWith("-") && !text.startsWith("--")) {
      for (let at = 1; at < text.length; at++) {
        const letter = text[at] as string;
        if (!"iInPLdaEs".includes(letter)) continue;
        // The rest of the word is this option's value.
        const rest = text.slice(at + 1);
        if (letter === "i") replace = rest || "{}";
        else if (letter === "I") replace = rest || (options[index + 1]?.text ?? null);
        break;
      }
    }
  }
  return replace || null;
}
