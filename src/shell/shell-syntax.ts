/**
 * A bash command-line parser for the approval gateway (SPEC S2, F4). It answers
 * every simple command the line would run, flattened: those of lists and
 * pipelines, subshells `( … )`, groups `{ …; }`, command substitutions `$( … )`
 * and backquotes (also inside double quotes and `${…}`), process substitutions
 * `<( … )`, unquoted here-document bodies, `case` arms and function bodies.
 * Words come out quote-removed; expansions stay as written (`$HOME`) and mark
 * the word as not literal, because their value is only known at run time.
 *
 * Hand-written rather than shell-quote's `parse`, which reads a newline as a
 * space (`ls⏎rm x` would hide the rm), accepts unterminated quotes, leaves
 * backquotes and `"$(…)"` as plain text, and does not know here-documents.
 * What this parser cannot follow (unbalanced parentheses, extglob, …) is a
 * parse error: the gateway asks rather than guesses.
 */

export interface ShellWord {
  /** After quote removal; expansions kept as written (`$HOME`, `$(…)`). */
  text: string;
  /** No expansion: `text` is exactly what the command receives. */
  literal: boolean;
  /** The word begins with a parameter, command or arithmetic expansion. */
  expandsAtStart: boolean;
  /** The word begins with an unquoted `~` (the home directory). */
  tilde: boolean;
  /** Some part was quoted or escaped (a quoted here-document delimiter keeps its body literal). */
  quoted: boolean;
  /** Unquoted `{a,b}` or `{1..3}`: bash turns the word into several. */
  braceExpansion: boolean;
}

export interface ShellRedirection {
  /** `>`, `>>`, `>|`, `&>`, `&>>`, `>&`, `<`, `<>`, `<&`. */
  op: string;
  target: ShellWord;
}

export interface SimpleCommand {
  words: ShellWord[];
  redirections: ShellRedirection[];
}

export type ShellParse = { ok: true; commands: SimpleCommand[] } | { ok: false; error: string };

const maxDepth = 32;

export function parseShell(source: string): ShellParse {
  const commands: SimpleCommand[] = [];
  try {
    new Parser(source, commands).parseList(null, 0);
  } catch (error) {
    if (error instanceof ShellSyntaxError) return { ok: false, error: error.message };
    // Quotes inside `${…}` inside quotes nest without a list in between; past the stack, it is too deep to judge.
    if (error instanceof RangeError) return { ok: false, error: "the command nests too deeply to check" };
    throw error;
  }
  return { ok: true, commands };
}

class ShellSyntaxError extends Error {}

interface PendingHeredoc {
  delimiter: string;
  quoted: boolean;
  stripTabs: boolean;
}

/** Characters that end an unquoted word. */
const wordEnd = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);
/** ASCII codes a plain run of word characters stops at: word ends, quotes, escapes, expansions. */
const special = new Uint8Array(128);
for (const c of [...wordEnd, "\\", "'", '"', "$", "`"]) special[c.charCodeAt(0)] = 1;

function isDigits(src: string, start: number, end: number): boolean {
  if (end <= start) return false;
  for (let at = start; at < end; at++) {
    const code = src.charCodeAt(at);
    if (code < 48 || code > 57) return false;
  }
  return true;
}
const arrayAssignment = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=$/;

function newWord(): ShellWord {
  return { text: "", literal: true, expandsAtStart: false, tilde: false, quoted: false, braceExpansion: false };
}

class Parser {
  private i = 0;
  private heredocs: PendingHeredoc[] = [];

  constructor(
    private readonly src: string,
    private readonly commands: SimpleCommand[],
  ) {}

  /** Reads commands until `end` (`)` of a subshell or substitution) or the end of input. */
  parseList(end: ")" | null, depth: number): void {
    if (depth > maxDepth) throw new ShellSyntaxError("the command nests too deeply to check");
    const src = this.src;
    let command: SimpleCommand = { words: [], redirections: [] };
    let caseDepth = 0;
    let inPattern = false; // reading a `case` arm's pattern, up to its `)`
    for (;;) {
      this.skipBlanks();
      if (this.i >= src.length) {
        command = this.finish(command);
        if (end !== null) throw new ShellSyntaxError('a "(" is not closed');
        return;
      }
      const c = src[this.i] as string;
      const next = src[this.i + 1];
      if (c === "#") {
        const newline = src.indexOf("\n", this.i);
        this.i = newline === -1 ? src.length : newline;
      } else if (c === "\n") {
        this.i++;
        command = this.finish(command);
        this.readHeredocBodies(depth);
      } else if (c === ";") {
        command = this.finish(command);
        if (next === ";" || next === "&") {
          // `;;`, `;&`, `;;&` end a case arm; the next pattern follows
          this.i += src.startsWith(";;&", this.i) ? 3 : 2;
          if (caseDepth > 0) inPattern = true;
        } else this.i++;
      } else if (c === "&") {
        if (next === ">") {
          const op = src.startsWith("&>>", this.i) ? "&>>" : "&>";
          this.i += op.length;
          this.readRedirectionTarget(command, op, depth);
        } else {
          this.i += next === "&" ? 2 : 1;
          command = this.finish(command);
        }
      } else if (c === "|") {
        this.i += next === "|" || next === "&" ? 2 : 1;
        if (!inPattern) command = this.finish(command);
      } else if (c === "(") {
        const first = command.words[0];
        if (inPattern) {
          this.i++; // the optional `(` before a case pattern
        } else if (next === "(" && (command.words.length === 0 || (command.words.length === 1 && first?.literal && first.text === "for"))) {
          this.i += 2; // `(( … ))` and `for (( … ))`: arithmetic
          this.skipArithmetic(depth);
          if (command.words.length > 0) command = { words: [], redirections: [] };
        } else if (command.words.length === 0) {
          this.i++;
          this.parseList(")", depth + 1);
        } else {
          // `name () { … }`: a function definition; its body is judged as if it ran
          let j = this.i + 1;
          while (src[j] === " " || src[j] === "\t") j++;
          if (src[j] !== ")") throw new ShellSyntaxError('unexpected "("');
          this.i = j + 1;
          command = { words: [], redirections: [] };
        }
      } else if (c === ")") {
        this.i++;
        if (inPattern) {
          inPattern = false;
          command = { words: [], redirections: [] };
        } else if (end === ")") {
          command = this.finish(command);
          return;
        } else throw new ShellSyntaxError('unbalanced ")"');
      } else if (c === "<" || c === ">") {
        this.readRedirection(command, depth);
      } else {
        const start = this.i;
        const word = this.readWord(depth);
        // `2>file`, `2>&1`: the digits name a file descriptor, not an argument
        const after = src[this.i];
        if ((after === "<" || after === ">") && isDigits(src, start, this.i)) continue;
        if (inPattern) {
          if (word.literal && word.text === "esac") {
            caseDepth--;
            inPattern = false;
          }
          continue;
        }
        if (caseDepth > 0 && command.words.length === 0 && word.literal && word.text === "esac") {
          caseDepth--;
          continue;
        }
        command.words.push(word);
        const head = command.words[0] as ShellWord;
        if (command.words.length === 3 && head.literal && head.text === "case" && word.literal && word.text === "in") {
          caseDepth++;
          inPattern = true;
          command = { words: [], redirections: [] };
        }
      }
    }
  }

  /** Records a finished command (if it has anything) and starts the next. */
  private finish(command: SimpleCommand): SimpleCommand {
    if (command.words.length > 0 || command.redirections.length > 0) this.commands.push(command);
    return { words: [], redirections: [] };
  }

  private skipBlanks(): void {
    const src = this.src;
    for (;;) {
      const c = src[this.i];
      if (c === " " || c === "\t") this.i++;
      else if (c === "\\" && src[this.i + 1] === "\n") this.i += 2;
      else return;
    }
  }

  private readRedirection(command: SimpleCommand, depth: number): void {
    const src = this.src;
    const c = src[this.i] as string;
    const next = src[this.i + 1];
    if (next === "(") {
      // `<( … )`, `>( … )`: process substitution, an argument naming a pipe
      const start = this.i;
      this.i += 2;
      this.parseList(")", depth + 1);
      command.words.push({ ...newWord(), text: src.slice(start, this.i), literal: false, expandsAtStart: true });
      return;
    }
    const op = ["<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&"].find((candidate) => src.startsWith(candidate, this.i)) ?? c;
    this.i += op.length;
    this.readRedirectionTarget(command, op, depth);
  }

  private readRedirectionTarget(command: SimpleCommand, op: string, depth: number): void {
    this.skipBlanks();
    const c = this.src[this.i];
    if (c === undefined || wordEnd.has(c)) throw new ShellSyntaxError(`the redirection "${op}" has no target`);
    const target = this.readWord(depth);
    if (op === "<<" || op === "<<-") {
      this.heredocs.push({ delimiter: target.text, quoted: target.quoted, stripTabs: op === "<<-" });
      return;
    }
    if (op === "<<<") return; // a here-string is data; its substitutions are already recorded
    if ((op === ">&" || op === "<&") && /^(?:\d+-?|-)$/.test(target.text)) return; // `2>&1`: duplicates a descriptor
    command.redirections.push({ op, target });
  }

  /** After a newline: the bodies of pending here-documents. Unquoted bodies expand `$( … )` and backquotes. */
  private readHeredocBodies(depth: number): void {
    const src = this.src;
    for (const heredoc of this.heredocs) {
      const bodyStart = this.i;
      let bodyEnd = src.length;
      while (this.i < src.length) {
        const newline = src.indexOf("\n", this.i);
        const lineEnd = newline === -1 ? src.length : newline;
        let line = src.slice(this.i, lineEnd);
        if (heredoc.stripTabs) line = line.replace(/^\t+/, "");
        const lineStart = this.i;
        this.i = newline === -1 ? src.length : newline + 1;
        if (line === heredoc.delimiter) {
          bodyEnd = lineStart;
          break;
        }
      }
      if (!heredoc.quoted) new Parser(src.slice(bodyStart, bodyEnd), this.commands).scanHeredocBody(depth + 1);
    }
    this.heredocs = [];
  }

  private scanHeredocBody(depth: number): void {
    const sink = newWord();
    while (this.i < this.src.length) {
      const c = this.src[this.i];
      if (c === "\\") this.i += 2;
      else if (c === "$") this.readDollar(sink, depth);
      else if (c === "`") this.readBackquote(sink, depth);
      else this.i++;
    }
  }

  readWord(depth: number): ShellWord {
    const src = this.src;
    const word = newWord();
    let shape = ""; // the unquoted characters, to spot brace expansion
    while (this.i < src.length) {
      const c = src[this.i] as string;
      if (wordEnd.has(c)) {
        if (c === "(" && !word.quoted && arrayAssignment.test(word.text)) {
          this.readArray(word, depth);
          continue;
        }
        break;
      }
      if (c === "\\") {
        const escaped = src[this.i + 1];
        this.i += 2;
        if (escaped === undefined || escaped === "\n") continue;
        word.text += escaped;
        word.quoted = true;
        shape += "_";
      } else if (c === "'") {
        const close = src.indexOf("'", this.i + 1);
        if (close === -1) throw new ShellSyntaxError("a single quote is not closed");
        word.text += src.slice(this.i + 1, close);
        word.quoted = true;
        shape += "_";
        this.i = close + 1;
      } else if (c === '"') {
        this.i++;
        this.readDoubleQuoted(word, depth);
        shape += "_";
      } else if (c === "$" && src[this.i + 1] === "'") {
        this.readAnsiC(word);
        shape += "_";
      } else if (c === "$" && src[this.i + 1] === '"') {
        this.i += 2; // `$"…"`: a translated string, read as a double-quoted one
        this.readDoubleQuoted(word, depth);
        shape += "_";
      } else if (c === "$") {
        this.readDollar(word, depth);
        shape += "_";
      } else if (c === "`") {
        this.readBackquote(word, depth);
        shape += "_";
      } else {
        if (c === "~" && word.text === "" && !word.quoted) word.tilde = true;
        // A run of ordinary characters at once.
        const start = this.i++;
        for (let code = src.charCodeAt(this.i); this.i < src.length && (code >= 128 || !special[code]); code = src.charCodeAt(++this.i));
        const run = src.slice(start, this.i);
        word.text += run;
        shape += run;
      }
    }
    if (/\{[^{}]*(?:,|\.\.)[^{}]*\}/.test(shape)) {
      word.braceExpansion = true;
      word.literal = false;
    }
    return word;
  }

  /** `name=( a b c )`: the elements join the assignment word. */
  private readArray(word: ShellWord, depth: number): void {
    const src = this.src;
    this.i++;
    const elements: string[] = [];
    for (;;) {
      while (src[this.i] === " " || src[this.i] === "\t" || src[this.i] === "\n") this.i++;
      if (this.i >= src.length) throw new ShellSyntaxError("an array assignment is not closed");
      if (src[this.i] === ")") {
        this.i++;
        break;
      }
      const element = this.readWord(depth);
      if (!element.literal) word.literal = false;
      if (element.text === "" && !element.quoted) throw new ShellSyntaxError("unexpected character in an array assignment");
      elements.push(element.text);
    }
    word.text += `(${elements.join(" ")})`;
  }

  private readDoubleQuoted(word: ShellWord, depth: number): void {
    const src = this.src;
    word.quoted = true;
    for (;;) {
      if (this.i >= src.length) throw new ShellSyntaxError("a double quote is not closed");
      const c = src[this.i] as string;
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === "\\") {
        const escaped = src[this.i + 1];
        if (escaped === "$" || escaped === "`" || escaped === '"' || escaped === "\\") {
          word.text += escaped;
          this.i += 2;
        } else if (escaped === "\n") this.i += 2;
        else {
          word.text += "\\";
          this.i++;
        }
      } else if (c === "$") this.readDollar(word, depth);
      else if (c === "`") this.readBackquote(word, depth);
      else {
        word.text += c;
        this.i++;
      }
    }
  }

  /** `$'…'`: bash's C-style string; decoded, so `$'\x72m'` reads as `rm`. */
  private readAnsiC(word: ShellWord): void {
    const src = this.src;
    word.quoted = true;
    this.i += 2;
    for (;;) {
      if (this.i >= src.length) throw new ShellSyntaxError("a $' quote is not closed");
      const c = src[this.i] as string;
      if (c === "'") {
        this.i++;
        return;
      }
      if (c !== "\\") {
        word.text += c;
        this.i++;
        continue;
      }
      const rest = src.slice(this.i + 1, this.i + 10);
      const sequence = /^(?:[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c[\s\S]|[\s\S])/.exec(rest)?.[0] ?? "";
      this.i += 1 + sequence.length;
      word.text += decodeAnsiEscape(sequence);
    }
  }

  /** `$name`, `${…}`, `$( … )`, `$(( … ))`, or a lone `$`. */
  private readDollar(word: ShellWord, depth: number): void {
    const src = this.src;
    const start = this.i;
    const next = src[this.i + 1];
    const atStart = word.text === "";
    if (next === "(") {
      if (src[this.i + 2] === "(") {
        this.i += 3;
        this.skipArithmetic(depth);
      } else {
        this.i += 2;
        this.parseList(")", depth + 1);
      }
    } else if (next === "{") {
      this.i += 2;
      this.skipParameterExpansion(depth);
    } else if (next !== undefined && /[A-Za-z_]/.test(next)) {
      this.i += 2;
      while (this.i < src.length && /[A-Za-z0-9_]/.test(src[this.i] as string)) this.i++;
    } else if (next !== undefined && /[0-9@*#?$!-]/.test(next)) {
      this.i += 2;
    } else {
      word.text += "$";
      this.i++;
      return;
    }
    word.text += src.slice(start, this.i);
    word.literal = false;
    if (atStart) word.expandsAtStart = true;
  }

  /** Inside `${ … }` up to its `}`; substitutions in it still count. */
  private skipParameterExpansion(depth: number): void {
    const src = this.src;
    const sink = newWord();
    let open = 1;
    while (this.i < src.length) {
      const c = src[this.i];
      if (c === "\\") this.i += 2;
      else if (c === "'") {
        const close = src.indexOf("'", this.i + 1);
        if (close === -1) throw new ShellSyntaxError("a single quote is not closed");
        this.i = close + 1;
      } else if (c === '"') {
        this.i++;
        this.readDoubleQuoted(sink, depth);
      } else if (c === "$") this.readDollar(sink, depth);
      else if (c === "`") this.readBackquote(sink, depth);
      else {
        if (c === "{") open++;
        if (c === "}" && --open === 0) {
          this.i++;
          return;
        }
        this.i++;
      }
    }
    throw new ShellSyntaxError('a "${" is not closed');
  }

  /** After `((`: up to the matching `))`; substitutions in it still count. */
  private skipArithmetic(depth: number): void {
    const src = this.src;
    const sink = newWord();
    let open = 0;
    while (this.i < src.length) {
      const c = src[this.i];
      if (c === "$") this.readDollar(sink, depth);
      else if (c === "`") this.readBackquote(sink, depth);
      else if (c === "(") {
        open++;
        this.i++;
      } else if (c === ")") {
        if (open === 0) {
          if (src[this.i + 1] !== ")") throw new ShellSyntaxError("an arithmetic expression is not closed properly");
          this.i += 2;
          return;
        }
        open--;
        this.i++;
      } else this.i++;
    }
    throw new ShellSyntaxError("an arithmetic expression is not closed");
  }

  /** `` `…` ``: the old command substitution; its text is unescaped and parsed as a command line. */
  private readBackquote(word: ShellWord, depth: number): void {
    const src = this.src;
    const start = this.i;
    let j = this.i + 1;
    while (j < src.length && src[j] !== "`") j += src[j] === "\\" ? 2 : 1;
    if (j >= src.length) throw new ShellSyntaxError("a backquote is not closed");
    const inner = src.slice(start + 1, j).replace(/\\([\\`$])/g, "$1");
    new Parser(inner, this.commands).parseList(null, depth + 1);
    if (word.text === "") word.expandsAtStart = true;
    word.text += src.slice(start, j + 1);
    word.literal = false;
    this.i = j + 1;
  }
}

const simpleEscapes: Record<string, string> = { a: "\x07", b: "\b", e: "\x1b", E: "\x1b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" };

function decodeAnsiEscape(sequence: string): string {
  if (sequence === "") return "\\";
  const kind = sequence[0] as string;
  if (/[0-7]/.test(kind)) return String.fromCharCode(parseInt(sequence, 8) & 0xff);
  if (kind === "x" || kind === "u" || kind === "U") {
    const code = parseInt(sequence.slice(1), 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : "";
  }
  if (kind === "c") return String.fromCharCode((sequence.charCodeAt(1) ?? 0) & 0x1f);
  return simpleEscapes[kind] ?? kind;
}
