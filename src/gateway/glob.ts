import { matchSteps } from "../workspace/match-steps.js";

/**
 * The wildcard of policy rules (SPEC S2, S9): `*` matches any run of characters
 * (spaces and slashes included), everything else is literal. Used for tool
 * names, command lines and URLs. Path patterns are globs with bash globstar
 * semantics, compiled by `compileGlob` (src/workspace/glob-pattern.ts); both
 * match in linear time and state their worst case, so a policy's rules can be
 * bounded before any of them runs (`policy-cost.ts`).
 */

/**
 * Worst-case steps of matching texts (sub-commands of a command line, or a URL), as a linear
 * function of how many texts and how many characters in all (steps: `match-steps.ts`).
 */
export interface TextCost {
  perText: number;
  perCharacter: number;
}

export const noTextCost: TextCost = { perText: 0, perCharacter: 0 };

export function addTextCosts(a: TextCost, b: TextCost): TextCost {
  return { perText: a.perText + b.perText, perCharacter: a.perCharacter + b.perCharacter };
}

/**
 * A `*`-only wildcard, matched without a regular expression: the first piece
 * is a prefix, the last a suffix, the middle ones found left to right (the
 * leftmost occurrence is always the best choice when `*` is the only wildcard).
 * Most rules have a literal prefix, so most texts are rejected in one compare.
 * Middle pieces are found with Knuth-Morris-Pratt, whose scan never steps back:
 * `String.indexOf` takes quadratic time on some long pieces (a 1,000-character
 * piece in a 100,000-character text: about 70 ms), KMP at most two steps per
 * character, whatever the pieces.
 */
export class Wildcard {
  readonly cost: TextCost;
  private readonly pieces: readonly string[];
  private readonly middle: ReadonlyArray<{ piece: Uint16Array; fallback: Int32Array }>;

  constructor(readonly pattern: string) {
    this.pieces = pattern.split("*");
    this.middle = this.pieces.slice(1, -1).flatMap((piece) => {
      if (piece === "") return [];
      const units = Uint16Array.from({ length: piece.length }, (_, index) => piece.charCodeAt(index));
      return [{ piece: units, fallback: fallbackOf(units) }];
    });
    const first = this.pieces[0] as string;
    const last = this.pieces.length > 1 ? (this.pieces[this.pieces.length - 1] as string) : "";
    // The prefix and suffix compares are native memcmp, a fraction of a step per character.
    this.cost = {
      perText: matchSteps.textTest + Math.ceil((first.length + last.length) / 8),
      perCharacter: this.middle.length > 0 ? matchSteps.scannedCharacter : 0,
    };
  }

  test(text: string): boolean {
    const pieces = this.pieces;
    const first = pieces[0] as string;
    if (pieces.length === 1) return text === first;
    const last = pieces[pieces.length - 1] as string;
    // Slice-and-compare: about three times cheaper than startsWith and endsWith in V8 (measured).
    if (text.length < first.length + last.length || text.slice(0, first.length) !== first || text.slice(text.length - last.length) !== last)
      return false;
    let at = first.length;
    const end = text.length - last.length;
    for (const { piece, fallback } of this.middle) {
      const found = find(text, piece, fallback, at, end);
      if (found === -1) return false;
      at = found + piece.length;
    }
    return true;
  }
}

export function compileWildcard(pattern: string): Wildcard {
  return new Wildcard(pattern);
}

/** KMP's failure function: for each prefix of `piece`, the length of its longest proper border. */
function fallbackOf(piece: Uint16Array): Int32Array {
  const fallback = new Int32Array(piece.length);
  let border = 0;
  for (let index = 1; index < piece.length; index++) {
    while (border > 0 && piece[index] !== piece[border]) border = fallback[border - 1] as number;
    if (piece[index] === piece[border]) border++;
    fallback[index] = border;
  }
  return fallback;
}

/** The first occurrence of `piece` (UTF-16 units) in `text` that starts at `from` or later and ends by `end`, or -1. */
function find(text: string, piece: Uint16Array, fallback: Int32Array, from: number, end: number): number {
  const length = piece.length;
  let matched = 0;
  for (let index = from; index < end; index++) {
    const code = text.charCodeAt(index);
    while (matched > 0 && code !== piece[matched]) matched = fallback[matched - 1] as number;
    if (code === piece[matched]) matched++;
    if (matched === length) return index - length + 1;
  }
  return -1;
}
