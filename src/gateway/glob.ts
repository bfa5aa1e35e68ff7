/**
 * The wildcard of policy rules (SPEC S2, S9): `*` matches any run of characters
 * (spaces and slashes included), everything else is literal. Used for tool
 * names, command lines and URLs. Path patterns are globs with bash globstar
 * semantics, compiled by `compileGlob` (src/workspace/glob-pattern.ts); both
 * match in linear time, so no rule can stall the process that judges a call.
 */

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
