import { addPathCosts, AlternativeMatcher, GlobPath, noPathCost, reachableStates, type PathCost } from "./glob-path.js";
import { GlobRefusal } from "./glob-refusal.js";
import { compileSegment, type Segment } from "./glob-segment.js";

/**
 * A model-written glob over workspace-relative paths ("src/a.ts": "/"-separated, no leading
 * "/" or "./", no "." or ".." segments), compiled once for the `list` and `grep` tools to
 * filter what the workspace walker yields. The glob only filters: it never decides where the
 * walker may go, but a pattern that names a way out ("..", a leading "/") is refused so the
 * model learns paths are relative to the workspace root.
 *
 * Semantics are bash's `globstar` + `dotglob` (picomatch with `dot: true`), case-sensitive:
 * - `*` any run of characters within a segment, `?` one character, `[abc]` `[a-z]`
 *   `[!x]` `[^x]` `[[:alpha:]]` one character of a class; none ever matches "/".
 * - `**` as a whole segment spans zero or more whole segments, so `a/**` also matches `a`
 *   itself; `**` inside a segment, or `***`, acts as `*`.
 * - `{a,b}` alternatives, nested, expanded before anything else as bash does (a "/" inside
 *   braces is a separator); braces without a comma (`{a}`) are literal text, as in bash;
 *   there are no `{1..3}` ranges.
 * - `\` makes the next character literal; `\/` is a separator.
 * - A `{` without its `}`, a `}` without its `{`, or a `[` without a `]` in its segment is
 *   refused (a model's typo more often than a file name): escape it to mean the character.
 *
 * Matching never backtracks (`glob-path.ts`, `glob-segment.ts`): its worst case is linear in
 * path length × expanded pattern length, and stated as `cost` so callers can bound the work of
 * many patterns before matching; the usual shapes cost a few steps whatever the path.
 *
 * Policy rules (SPEC S2, S9) use the same matcher with {@link GlobOptions}: absolute patterns
 * allowed, and tighter caps.
 */
export type GlobPattern =
  | {
      ok: true;
      source: string;
      /**
       * True when the workspace-relative file path matches the pattern. An absolute pattern
       * (only with `absolute: "allow"`) takes an absolute path instead; a path of the other
       * kind never matches.
       */
      matches(relativePath: string): boolean;
      /** The same, for a path split once (`GlobPath`) and matched against many patterns. */
      matchesPath(path: GlobPath): boolean;
      /** The worst-case steps of one match, by the path's size (SPEC S9; `match-steps.ts`). */
      cost: PathCost;
      /** Whether every alternative starts with "/"; always false unless `absolute: "allow"`. */
      absolute: boolean;
      /** The leading literal segments all alternatives share, unescaped: where a walker can start. */
      staticPrefix: string[];
      /** False only when no path inside the folder `relativeDir` can match, so a walker may skip it. */
      mayMatchUnder(relativeDir: string): boolean;
    }
  /** `outside`: the pattern names a place outside the workspace (absolute, `..`); otherwise it is malformed. */
  | { ok: false; message: string; outside: boolean };

/** How {@link compileGlob} reads a pattern; the defaults are the `list` and `grep` tools'. */
export interface GlobOptions {
  /**
   * "refuse" (default): a leading "/" names a place outside the workspace and is refused.
   * "allow" (policy rules): a pattern whose alternatives all start with "/" is absolute and
   * matches absolute paths by their segments ("/" itself has none, so "/**" matches it);
   * mixing absolute and relative alternatives is refused.
   */
  absolute?: "refuse" | "allow";
  /** Longest pattern, in UTF-16 code units. Default 1000. */
  maxPatternLength?: number;
  /** Most alternatives the braces may expand to. Default 1000. */
  maxAlternatives?: number;
  /**
   * Most characters of all alternatives together. Matching costs path length × expanded
   * length; the default, 20000, keeps the worst case near 20 times the pattern cap.
   */
  maxExpandedLength?: number;
}

type Limits = Required<GlobOptions>;

const defaultLimits: Limits = { absolute: "refuse", maxPatternLength: 1000, maxAlternatives: 1000, maxExpandedLength: 20_000 };

/** Text still holding its brace groups: literal runs (escapes kept) and groups, each a list of alternatives. */
type BracedText = Array<string | BracedText[]>;

/**
 * Compiles a model-written glob (see {@link GlobPattern}), or says what is wrong with it in a
 * message the model can act on. Pure: nothing is read from disk.
 */
export function compileGlob(pattern: string, options: GlobOptions = {}): GlobPattern {
  const limits: Limits = { ...defaultLimits, ...options };
  let compiled: { alternatives: Segment[][]; absolute: boolean };
  try {
    compiled = compileAlternatives(pattern, limits);
  } catch (error) {
    if (error instanceof GlobRefusal) return { ok: false, message: error.message, outside: error.outside };
    throw error;
  }
  return new CompiledGlob(pattern, compiled.alternatives, compiled.absolute);
}

/** A compiled glob: a class, so the gateway's loop over many rules calls one shape of matcher. */
class CompiledGlob {
  readonly ok = true;
  readonly staticPrefix: string[];
  readonly cost: PathCost;
  private readonly matchers: readonly AlternativeMatcher[];

  constructor(
    readonly source: string,
    private readonly alternatives: readonly Segment[][],
    readonly absolute: boolean,
  ) {
    this.matchers = alternatives.map((segments) => new AlternativeMatcher(segments));
    this.staticPrefix = staticPrefixOf(alternatives);
    let cost = noPathCost;
    for (const matcher of this.matchers) cost = addPathCosts(cost, matcher.cost);
    this.cost = cost;
  }

  matches(path: string): boolean {
    return this.matchesPath(GlobPath.of(path));
  }

  matchesPath(path: GlobPath): boolean {
    // An absolute pattern takes only absolute paths; a relative one only relative paths.
    if (path.rooted !== this.absolute) return false;
    for (const matcher of this.matchers) if (matcher.matches(path)) return true;
    return false;
  }

  mayMatchUnder(dir: string): boolean {
    const path = GlobPath.ofNames(
      dir.split("/").filter((name) => name !== "" && name !== "."),
      false,
    );
    // Any live state before the end can still take one more segment below the folder.
    return this.alternatives.some((segments) => reachableStates(segments, path).slice(0, segments.length).includes(true));
  }
}

function compileAlternatives(pattern: string, limits: Limits): { alternatives: Segment[][]; absolute: boolean } {
  const { maxPatternLength, maxAlternatives, maxExpandedLength } = limits;
  if (pattern === "") throw new GlobRefusal('The glob pattern is empty; use "**" to match every file.');
  if (pattern.length > maxPatternLength)
    throw new GlobRefusal(`The glob pattern is ${pattern.length} characters long; at most ${maxPatternLength} are allowed.`);
  if (pattern.includes("\u0000")) throw new GlobRefusal("The glob pattern contains a NUL character.");
  const braced = parseBraces(pattern);
  if (countAlternatives(braced, maxAlternatives) > maxAlternatives) {
    throw new GlobRefusal(
      `The braces in the glob pattern expand to more than ${maxAlternatives} alternatives; use fewer "{…}" groups or fewer choices in each.`,
    );
  }
  const expanded = [...new Set(expandBraces(braced))];
  const expandedLength = expanded.reduce((sum, alternative) => sum + alternative.length, 0);
  if (expandedLength > maxExpandedLength) {
    throw new GlobRefusal(
      `The braces in the glob pattern expand to ${expandedLength} characters in all; at most ${maxExpandedLength} are allowed. Use fewer or shorter alternatives.`,
    );
  }
  const split = expanded.map((alternative) => splitSegments(alternative, limits));
  const absolute = split[0]?.absolute === true;
  if (split.some((alternative) => alternative.absolute !== absolute)) {
    throw new GlobRefusal(
      'Some alternatives of the glob pattern start with "/" and some do not; write the absolute and the relative ones as two patterns.',
    );
  }
  const compiledSegments = new Map<string, Segment>();
  const alternatives = split.map(({ segments }) =>
    segments.map((raw) => {
      let segment = compiledSegments.get(raw);
      if (!segment) {
        segment = compileSegment(raw, limits.absolute);
        compiledSegments.set(raw, segment);
      }
      return segment;
    }),
  );
  return { alternatives, absolute };
}

/** Parses `{…}` groups; escapes stay in the text (as `\x`) for the segment compiler. */
function parseBraces(pattern: string): BracedText {
  let position = 0;
  const sequence = (inGroup: boolean): BracedText => {
    const parts: BracedText = [];
    let text = "";
    while (position < pattern.length) {
      const character = pattern[position] as string;
      if (character === "\\") {
        if (position + 1 >= pattern.length)
          throw new GlobRefusal('The glob pattern ends with a lone "\\"; write "\\\\" to match a backslash.');
        text += pattern.slice(position, position + 2);
        position += 2;
      } else if (character === "{") {
        position++;
        const alternatives = group();
        if (alternatives.length > 1) {
          if (text !== "") parts.push(text);
          text = "";
          parts.push(alternatives);
        } else {
          // No comma: the braces are text, and groups inside them still expand.
          if (text !== "") parts.push(text);
          text = "}";
          parts.push("{", ...(alternatives[0] as BracedText));
        }
      } else if (inGroup && (character === "," || character === "}")) {
        break;
      } else if (character === "}") {
        throw new GlobRefusal('The glob pattern has a "}" with no "{" before it; write "\\}" to match a literal "}".');
      } else {
        text += character;
        position++;
      }
    }
    if (text !== "") parts.push(text);
    return parts;
  };
  const group = (): BracedText[] => {
    const alternatives: BracedText[] = [];
    for (;;) {
      alternatives.push(sequence(true));
      const closer = pattern[position++];
      if (closer === "}") return alternatives;
      if (closer !== ",") throw new GlobRefusal('A "{" in the glob pattern is not closed by "}"; write "\\{" to match a literal "{".');
    }
  };
  return sequence(false);
}

/** How many alternatives the braces expand to, counted without expanding and capped just above the limit. */
function countAlternatives(text: BracedText, cap: number): number {
  let count = 1;
  for (const part of text) {
    if (typeof part === "string") continue;
    let choices = 0;
    for (const alternative of part) choices = Math.min(choices + countAlternatives(alternative, cap), cap + 1);
    count = Math.min(count * choices, cap + 1);
  }
  return count;
}

function expandBraces(text: BracedText): string[] {
  let results = [""];
  for (const part of text) {
    const options = typeof part === "string" ? [part] : part.flatMap(expandBraces);
    results = results.flatMap((prefix) => options.map((option) => prefix + option));
  }
  return results;
}

/**
 * Splits an expanded alternative at "/" and "\/", refusing what cannot be a relative path
 * pattern, or (with `absolute: "allow"`) an absolute one, whose leading "/" is dropped.
 */
function splitSegments(alternative: string, limits: Limits): { segments: string[]; absolute: boolean } {
  const segments: string[] = [];
  let current = "";
  for (let index = 0; index < alternative.length; index++) {
    const character = alternative[index] as string;
    const escaped = character === "\\" ? (alternative[++index] as string) : null;
    if (character === "/" || escaped === "/") {
      segments.push(current);
      current = "";
    } else {
      current += escaped === null ? character : `\\${escaped}`;
    }
  }
  segments.push(current);
  if (alternative === "")
    throw new GlobRefusal('The glob pattern (or one of its brace alternatives) is empty; use "**" to match every file.');
  const absolute = segments[0] === "";
  if (absolute) {
    if (limits.absolute !== "allow") {
      throw new GlobRefusal(
        'Glob patterns are relative to the workspace root: drop the leading "/" (write "src/**/*.ts", not "/src/**/*.ts").',
        true,
      );
    }
    segments.shift();
    if (segments.length === 1 && segments[0] === "") return { segments: [], absolute }; // "/": the root itself
  }
  if (segments.includes(""))
    throw new GlobRefusal(
      'The glob pattern has an empty path segment ("//" or a trailing "/"); to match everything in a folder write "folder/**".',
    );
  return { segments, absolute };
}

function staticPrefixOf(alternatives: readonly Segment[][]): string[] {
  const prefix: string[] = [];
  for (let position = 0; ; position++) {
    const texts = new Set(
      alternatives.map((segments) => {
        const segment = segments[position];
        return segment?.kind === "literal" ? segment.text : null;
      }),
    );
    const [text] = texts;
    if (texts.size !== 1 || text === null || text === undefined) return prefix;
    prefix.push(text);
  }
}
