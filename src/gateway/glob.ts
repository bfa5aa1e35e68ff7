/**
 * Pattern compilers for policy rules (SPEC S2). Two flavours:
 *
 * - wildcard: `*` matches any run of characters (spaces and slashes included),
 *   everything else is literal. Used for tool names, command lines and URLs.
 * - path glob, picomatch-style with `dot: true`: `*` and `?` stay within one
 *   path segment, `**` as a whole segment spans any number of segments (zero
 *   included), `[…]` character classes, `{a,b}` alternatives, `\` escapes.
 *
 * Written here rather than taken from picomatch because the subset is small,
 * and picomatch is not a direct dependency of this project.
 */

export type PatternResult = { ok: true; regex: RegExp } | { ok: false; error: string };

const regexSpecial = /[\\^$.*+?()[\]{}|/]/g;

function escapeRegex(text: string): string {
  return text.replace(regexSpecial, "\\$&");
}

/**
 * A `*`-only wildcard, matched without a regular expression: the first piece
 * is a prefix, the last a suffix, the middle ones found left to right (the
 * leftmost occurrence is always the best choice when `*` is the only wildcard).
 * Most rules have a literal prefix, so most texts are rejected in one compare.
 */
export class Wildcard {
  private readonly pieces: readonly string[];

  constructor(readonly pattern: string) {
    this.pieces = pattern.split("*");
  }

  test(text: string): boolean {
    const pieces = this.pieces;
    const first = pieces[0] as string;
    if (pieces.length === 1) return text === first;
    const last = pieces[pieces.length - 1] as string;
    if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
    let at = first.length;
    const end = text.length - last.length;
    for (let index = 1; index < pieces.length - 1; index++) {
      const piece = pieces[index] as string;
      if (piece === "") continue;
      const found = text.indexOf(piece, at);
      if (found === -1 || found + piece.length > end) return false;
      at = found + piece.length;
    }
    return true;
  }
}

export function compileWildcard(pattern: string): Wildcard {
  return new Wildcard(pattern);
}

export function compilePathGlob(pattern: string): PatternResult {
  const segments = pattern.replace(/^(?:\.\/)+/, "").split("/");
  let source = "";
  let joinNext = false; // the previous `**` already supplied the separator
  for (const [index, segment] of segments.entries()) {
    const last = index === segments.length - 1;
    if (segment === "**") {
      if (index === 0) source += last ? "[\\s\\S]*" : "(?:[\\s\\S]*/)?";
      else source += last ? "(?:/[\\s\\S]*)?" : "(?:/[\\s\\S]*)?/";
      joinNext = !last;
      continue;
    }
    if (index > 0 && !joinNext) source += "/";
    joinNext = false;
    const compiled = compileSegment(segment);
    if (!compiled.ok) return compiled;
    source += compiled.source;
  }
  return { ok: true, regex: new RegExp(`^${source}$`) };
}

/** One path segment: `*`, `?`, `[…]`, `{a,b}` and escapes; `**` inside a segment acts as `*`. */
function compileSegment(segment: string): { ok: true; source: string } | { ok: false; error: string } {
  let source = "";
  let braces = 0;
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i] as string;
    if (c === "\\") {
      if (i + 1 >= segment.length) return { ok: false, error: "the pattern ends with a lone backslash" };
      source += escapeRegex(segment[++i] as string);
    } else if (c === "*") {
      while (segment[i + 1] === "*") i++;
      source += "[^/]*";
    } else if (c === "?") {
      source += "[^/]";
    } else if (c === "[") {
      const end = segment.indexOf("]", i + 2);
      if (end === -1) return { ok: false, error: 'a "[" in the pattern is not closed' };
      let body = segment.slice(i + 1, end);
      if (body.startsWith("!")) body = `^${body.slice(1)}`;
      source += `[${body.replace(/\\/g, "\\\\")}]`;
      i = end;
    } else if (c === "{") {
      braces++;
      source += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      source += ")";
    } else if (c === "," && braces > 0) {
      source += "|";
    } else {
      source += escapeRegex(c);
    }
  }
  if (braces > 0) return { ok: false, error: 'a "{" in the pattern is not closed' };
  try {
    new RegExp(source);
  } catch {
    return { ok: false, error: "the pattern is not a valid glob" };
  }
  return { ok: true, source };
}
