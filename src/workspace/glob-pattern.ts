import { RE2JS } from "re2js";

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
 * Matching is a segment-level automaton whose wildcard segments run on RE2, so it takes
 * time linear in path length × expanded pattern length: no input can make it backtrack.
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

/** One segment of an expanded pattern. */
type Segment = { kind: "globstar" } | { kind: "literal"; text: string } | { kind: "wildcard"; regex: RE2JS };

/** Text still holding its brace groups: literal runs (escapes kept) and groups, each a list of alternatives. */
type BracedText = Array<string | BracedText[]>;

/** A pattern refused for a reason the model can fix; caught at the boundary and returned as a value. */
class GlobRefusal extends Error {
  constructor(
    message: string,
    readonly outside = false,
  ) {
    super(message);
  }
}

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
  const { alternatives, absolute } = compiled;
  const rooted = limits.absolute === "allow";
  return {
    ok: true,
    source: pattern,
    absolute,
    staticPrefix: staticPrefixOf(alternatives),
    matches(path) {
      let names: string[];
      if (absolute) {
        if (!path.startsWith("/")) return false;
        names = path === "/" ? [] : path.slice(1).split("/");
      } else {
        if (rooted && path.startsWith("/")) return false;
        names = path.split("/");
      }
      return alternatives.some((segments) => reachableStates(segments, names)[segments.length] === true);
    },
    mayMatchUnder(dir) {
      const names = dir.split("/").filter((name) => name !== "" && name !== ".");
      // Any live state before the end can still take one more segment below the folder.
      return alternatives.some((segments) => reachableStates(segments, names).slice(0, segments.length).includes(true));
    },
  };
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
        segment = compileSegment(raw, limits);
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

function compileSegment(raw: string, limits: Limits): Segment {
  if (raw === "**") return { kind: "globstar" };
  const characters = Array.from(raw);
  let source = "";
  let literal: string | null = "";
  for (let index = 0; index < characters.length; index++) {
    const character = characters[index] as string;
    if (character === "\\") {
      const escaped = characters[++index] as string;
      source += quote(escaped);
      if (literal !== null) literal += escaped;
    } else if (character === "*") {
      while (characters[index + 1] === "*") index++;
      source += "[^/]*";
      literal = null;
    } else if (character === "?") {
      source += "[^/]";
      literal = null;
    } else if (character === "[") {
      const characterClass = compileClass(characters, index);
      source += characterClass.source;
      index = characterClass.end;
      literal = null;
    } else {
      source += quote(character);
      if (literal !== null) literal += character;
    }
  }
  if (literal === "." || literal === "..") {
    throw limits.absolute === "allow"
      ? new GlobRefusal(
          `The glob pattern has a "${literal}" segment; paths are matched in normal form, where "." and ".." never appear: write "src/*.ts" or "/etc/*", not "src/./x" or "src/../x".`,
        )
      : new GlobRefusal(
          `The glob pattern has a "${literal}" segment; patterns are relative to the workspace root and cannot name "." or "..": write "src/*.ts", not "./src/*.ts" or "../src/*.ts".`,
          literal === "..",
        );
  }
  if (literal !== null) return { kind: "literal", text: literal };
  try {
    return { kind: "wildcard", regex: RE2JS.compile(source) };
  } catch (error) {
    throw new GlobRefusal(`The segment "${raw}" of the glob pattern is not valid: ${(error as Error).message}.`);
  }
}

const posixClassNames = new Set([
  "alnum",
  "alpha",
  "ascii",
  "blank",
  "cntrl",
  "digit",
  "graph",
  "lower",
  "print",
  "punct",
  "space",
  "upper",
  "word",
  "xdigit",
]);

/**
 * The bracket expression opening at `start`, as an RE2 class and the index of its `]`. A `]`
 * right after `[`, `[!` or `[^` is a member, as in bash. Segments never hold "/", so a class
 * cannot match it; negated classes still exclude it to say so.
 */
function compileClass(characters: readonly string[], start: number): { source: string; end: number } {
  let index = start + 1;
  const negated = characters[index] === "!" || characters[index] === "^";
  if (negated) index++;
  let members = "";
  for (let first = true; index < characters.length; index++, first = false) {
    const character = characters[index] as string;
    if (character === "]" && !first) return { source: `[${negated ? "^/" : ""}${members}]`, end: index };
    if (character === "[" && characters[index + 1] === ":") {
      const close = characters.indexOf(":", index + 2);
      const name = characters.slice(index + 2, close).join("");
      if (close !== -1 && characters[close + 1] === "]" && posixClassNames.has(name)) {
        members += `[:${name}:]`;
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
      members += `${quote(low)}-${quote(high)}`;
    } else {
      members += quote(low);
    }
  }
  throw new GlobRefusal('A "[" in the glob pattern is not closed by "]" within its path segment; write "\\[" to match a literal "[".');
}

/** One character as RE2 source: ASCII punctuation escaped (RE2 takes `\` before any of it), the rest as is. */
function quote(character: string): string {
  const code = character.charCodeAt(0);
  const alphanumeric = (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
  return code < 128 && !alphanumeric ? `\\${character}` : character;
}

/**
 * The pattern positions reachable after matching `names` (path segments) from the start,
 * with globstars closed over: a globstar may match no segment (move on) or one more (stay).
 * Each name is tested once per live position, so the cost is linear in both lengths.
 */
function reachableStates(segments: readonly Segment[], names: readonly string[]): boolean[] {
  let states = closeOverGlobstars(segments, [true]);
  for (const name of names) {
    const next: boolean[] = [];
    let alive = false;
    for (let position = 0; position < segments.length; position++) {
      if (!states[position]) continue;
      const segment = segments[position] as Segment;
      if (segment.kind === "globstar") next[position] = alive = true;
      else if (segment.kind === "literal" ? segment.text === name : segment.regex.matches(name)) next[position + 1] = alive = true;
    }
    if (!alive) return [];
    states = closeOverGlobstars(segments, next);
  }
  return states;
}

function closeOverGlobstars(segments: readonly Segment[], states: boolean[]): boolean[] {
  for (let position = 0; position < segments.length; position++) {
    if (states[position] && segments[position]?.kind === "globstar") states[position + 1] = true;
  }
  return states;
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
