import type { ShellWord } from "../shell-syntax.js";

/** `watch` joins its words with spaces and hands them to `sh -c`; a word only known at run time keeps the line unknown. */
export function joinedCommandLine(words: readonly ShellWord[]): ShellWord {
  return { ...(words[0] as ShellWord), text: joinWords(words), literal: words.every((word) => word.literal) };
}

export function joinWords(words: readonly ShellWord[]): string {
  let text = "";
  for (let index = 0; index < words.length; index++)
    text += index === 0 ? (words[index] as ShellWord).text : ` ${(words[index] as ShellWord).text}`;
  return text;
}
