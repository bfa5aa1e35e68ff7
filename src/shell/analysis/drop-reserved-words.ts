import type { ShellWord } from "../shell-syntax.js";
import { reservedWords } from "./shells.js";

export function dropReservedWords(words: readonly ShellWord[]): readonly ShellWord[] {
  let start = 0;
  for (;;) {
    const word = words[start];
    if (!word?.literal) break;
    if (reservedWords.has(word.text)) start++;
    else if (word.text === "function") start += 2;
    else break;
  }
  return start === 0 ? words : words.slice(start);
}
