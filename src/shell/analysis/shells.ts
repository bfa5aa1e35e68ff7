/** Programs that run a command line given as text: shells with `-c`, `eval`, `su -c`. */
export const shells: ReadonlySet<string> = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"]);
/** Shell options that take the next word as their value. */
export const shellValueOptions: ReadonlySet<string> = new Set(["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]);

/** Shell reserved words that may start a command; dropped to reach the command itself. */
export const reservedWords: ReadonlySet<string> = new Set([
  "{",
  "}",
  "!",
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "while",
  "until",
  "esac",
  "coproc",
]);

/** Builtins whose `NAME=value` arguments set variables, like leading assignments. */
export const declarers: ReadonlySet<string> = new Set(["export", "declare", "typeset", "local", "readonly"]);
