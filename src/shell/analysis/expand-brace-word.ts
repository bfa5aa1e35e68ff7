import type { ShellWord } from "../shell-syntax.js";

/** `{rm,-rf,x}` as a whole word is `rm -rf x`; other brace expansions stay unknown. */
export function expandBraceWord(word: ShellWord): ShellWord[] | null {
  const match = /^\{([^{}$`]*,[^{}$`]*)\}$/.exec(word.text);
  if (!match) return null;
  return (match[1] as string).split(",").map((text) => ({ ...word, text, literal: true, braceExpansion: false }));
}
