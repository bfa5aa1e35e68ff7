import { GlobRefusal } from "./glob-refusal.js";

/**
 * One path segment of a glob (SPEC S6, S9): `**` alone, a literal name, or a wildcard over
 * one name, where `*` is any run of characters, `?` one character and `[…]` one character
 * of a class (bash's bracket expressions; POSIX classes are ASCII, as in RE2). Names never
 * hold "/", so nothing here can cross a segment.
 *
 * A wildcard is matched without a regular expression, in time bounded by its shape: the
 * pieces between its stars are fixed-length, so the first is anchored at the start, the
 * last at the end, and each middle one is found leftmost (always the best choice when `*`
 * is the only repetition). `compares` states the worst case.
 */
export type Segment = { kind: "globstar" } | { kind: "literal"; text: string } | { kind: "wildcard"; matcher: WildcardSegment };

/** A name as code points, so that `?` takes an astral character whole. */
export type NameCodes = readonly number[];

/** Atoms are code points (≥ 0), `?` (-1), or class k (-2 - k). */
const anyCharacter = -1;

interface CharacterClass {
  negated: boolean;
  /** Pairs of code points, low then high, inclusive. */
  ranges: readonly number[];
  posix: ReadonlyArray<(code: number) => boolean>;
}

export class WildcardSegment {
  /**
   * The worst case of one test, in characters compared: `anchored` (the first and last pieces)
   * once, plus `middle` (the pieces between stars, each searched leftmost) per character of the name.
   */
  readonly compares: { anchored: number; middle: number };
  private readonly starred: boolean;
  private readonly first: readonly number[];
  private readonly last: readonly number[];
  private readonly middle: ReadonlyArray<readonly number[]>;

  /** `pieces` split at the stars; a single piece means no star at all. */
  constructor(
    pieces: ReadonlyArray<readonly number[]>,
    private readonly classes: readonly CharacterClass[],
  ) {
    this.first = pieces[0] as readonly number[];
    this.last = pieces.length > 1 ? (pieces[pieces.length - 1] as readonly number[]) : [];
    this.middle = pieces.slice(1, -1);
    const middleAtoms = this.middle.reduce((sum, piece) => sum + piece.length, 0);
    this.compares = { anchored: this.first.length + this.last.length, middle: middleAtoms };
    this.starred = pieces.length > 1;
  }

  matches(name: NameCodes): boolean {
    const first = this.first;
    if (!this.starred) return name.length === first.length && this.matchesAt(name, 0, first);
    const last = this.last;
    const end = name.length - last.length;
    if (end < first.length || !this.matchesAt(name, 0, first) || !this.matchesAt(name, end, last)) return false;
    let at = first.length;
    for (const piece of this.middle) {
      const found = this.find(name, at, end, piece);
      if (found === -1) return false;
      at = found + piece.length;
    }
    return true;
  }

  /** The leftmost start in [from, end - piece.length] where `piece` matches, or -1. */
  private find(name: NameCodes, from: number, end: number, piece: readonly number[]): number {
    for (let start = from; start + piece.length <= end; start++) if (this.matchesAt(name, start, piece)) return start;
    return -1;
  }

  private matchesAt(name: NameCodes, at: number, piece: readonly number[]): boolean {
    for (let index = 0; index < piece.length; index++) {
      const atom = piece[index] as number;
      const code = name[at + index] as number;
      if (atom >= 0 ? atom !== code : atom !== anyCharacter && !this.inClass(this.classes[-2 - atom] as CharacterClass, code)) return false;
    }
    return true;
  }

  private inClass(characterClass: CharacterClass, code: number): boolean {
    let member = false;
    const ranges = characterClass.ranges;
    for (let index = 0; index < ranges.length && !member; index += 2)
      member = code >= (ranges[index] as number) && code <= (ranges[index + 1] as number);
    for (let index = 0; index < characterClass.posix.length && !member; index++)
      member = (characterClass.posix[index] as (code: number) => boolean)(code);
    return member !== characterClass.negated;
  }
}

const between = (low: string, high: string) => {
  const from = low.charCodeAt(0);
  const to = high.charCodeAt(0);
  return (code: number) => code >= from && code <= to;
};
const digit = between("0", "9");
const upper = between("A", "Z");
const lower = between("a", "z");
const alpha = (code: number) => upper(code) || lower(code);
const alnum = (code: number) => alpha(code) || digit(code);

/** The POSIX classes as RE2 (and the C locale) define them: ASCII only. */
const posixClasses: ReadonlyMap<string, (code: number) => boolean> = new Map([
  ["alnum", alnum],
  ["alpha", alpha],
  ["ascii", (code: number) => code <= 0x7f],
  ["blank", (code: number) => code === 0x20 || code === 0x09],
  ["cntrl", (code: number) => code <= 0x1f || code === 0x7f],
  ["digit", digit],
  ["graph", (code: number) => code >= 0x21 && code <= 0x7e],
  ["lower", lower],
  ["print", (code: number) => code >= 0x20 && code <= 0x7e],
  ["punct", (code: number) => code >= 0x21 && code <= 0x7e && !alnum(code)],
  ["space", (code: number) => code === 0x20 || (code >= 0x09 && code <= 0x0d)],
  ["upper", upper],
  ["word", (code: number) => alnum(code) || code === 0x5f],
  ["xdigit", (code: number) => digit(code) || between("a", "f")(code) || between("A", "F")(code)],
]);

/**
 * Compiles one segment of an expanded alternative (escapes still in it as `\x`). `absolute`
 * says whether policy rules' wording applies to the refusal of "." and ".." segments.
 */
export function compileSegment(raw: string, absolute: "refuse" | "allow"): Segment {
  if (raw === "**") return { kind: "globstar" };
  const characters = Array.from(raw);
  const pieces: number[][] = [[]];
  const classes: CharacterClass[] = [];
  let literal: string | null = "";
  for (let index = 0; index < characters.length; index++) {
    const character = characters[index] as string;
    const piece = pieces[pieces.length - 1] as number[];
    if (character === "\\") {
      const escaped = characters[++index] as string;
      piece.push(escaped.codePointAt(0) as number);
      if (literal !== null) literal += escaped;
    } else if (character === "*") {
      while (characters[index + 1] === "*") index++;
      pieces.push([]);
      literal = null;
    } else if (character === "?") {
      piece.push(anyCharacter);
      literal = null;
    } else if (character === "[") {
      const characterClass = compileClass(characters, index, raw);
      piece.push(-2 - classes.length);
      classes.push(characterClass.class);
      index = characterClass.end;
      literal = null;
    } else {
      piece.push(character.codePointAt(0) as number);
      if (literal !== null) literal += character;
    }
  }
  if (literal === "." || literal === "..") {
    throw absolute === "allow"
      ? new GlobRefusal(
          `The glob pattern has a "${literal}" segment; paths are matched in normal form, where "." and ".." never appear: write "src/*.ts" or "/etc/*", not "src/./x" or "src/../x".`,
        )
      : new GlobRefusal(
          `The glob pattern has a "${literal}" segment; patterns are relative to the workspace root and cannot name "." or "..": write "src/*.ts", not "./src/*.ts" or "../src/*.ts".`,
          literal === "..",
        );
  }
  if (literal !== null) return { kind: "literal", text: literal };
  return { kind: "wildcard", matcher: new WildcardSegment(pieces, classes) };
}

/**
 * The bracket expression opening at `start`, and the index of its `]`. A `]` right after
 * `[`, `[!` or `[^` is a member, as in bash; `\` escapes; `[:name:]` is a POSIX class.
 */
function compileClass(characters: readonly string[], start: number, raw: string): { class: CharacterClass; end: number } {
  let index = start + 1;
  const negated = characters[index] === "!" || characters[index] === "^";
  if (negated) index++;
  const ranges: number[] = [];
  const posix: Array<(code: number) => boolean> = [];
  for (let first = true; index < characters.length; index++, first = false) {
    const character = characters[index] as string;
    if (character === "]" && !first) return { class: { negated, ranges, posix }, end: index };
    if (character === "[" && characters[index + 1] === ":") {
      const close = characters.indexOf(":", index + 2);
      const test = posixClasses.get(characters.slice(index + 2, close).join(""));
      if (close !== -1 && characters[close + 1] === "]" && test) {
        posix.push(test);
        index = close + 1;
        continue;
      }
    }
    const low = character === "\\" ? (characters[++index] as string | undefined) : character;
    if (low === undefined) break;
    if (characters[index + 1] === "-" && characters[index + 2] !== undefined && characters[index + 2] !== "]") {
      index += 2;
      const high = characters[index] === "\\" ? characters[++index] : characters[index];
      if (high === undefined) break;
      const [from, to] = [low.codePointAt(0) as number, high.codePointAt(0) as number];
      if (from > to)
        throw new GlobRefusal(`The segment "${raw}" of the glob pattern is not valid: the range "${low}-${high}" runs backwards.`);
      ranges.push(from, to);
    } else {
      const code = low.codePointAt(0) as number;
      ranges.push(code, code);
    }
  }
  throw new GlobRefusal('A "[" in the glob pattern is not closed by "]" within its path segment; write "\\[" to match a literal "[".');
}
