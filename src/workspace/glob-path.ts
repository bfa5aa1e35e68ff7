import type { NameCodes, Segment } from "./glob-segment.js";
import { matchSteps } from "./match-steps.js";

/**
 * A path split once for every glob it is matched against (SPEC S9: the gateway matches one
 * path against all of a policy's rules), and only if one looks at its names. `rooted`: it
 * starts with "/", whose names then follow it ("/" itself has none). Names are turned into
 * code points only when a wildcard segment looks at them, once each.
 */
export class GlobPath {
  readonly rooted: boolean;
  private split: readonly string[] | undefined;
  private codes: Array<NameCodes | undefined> | undefined;

  private constructor(
    private readonly source: string,
    rooted: boolean,
    names?: readonly string[],
  ) {
    this.rooted = rooted;
    this.split = names;
  }

  static of(path: string): GlobPath {
    return new GlobPath(path, path.startsWith("/"));
  }

  static ofNames(names: readonly string[], rooted: boolean): GlobPath {
    return new GlobPath("", rooted, names);
  }

  get names(): readonly string[] {
    if (this.split === undefined) {
      const path = this.source;
      this.split = this.rooted ? (path === "/" ? [] : path.slice(1).split("/")) : path.split("/");
    }
    return this.split;
  }

  /** How many names, their characters, and the longest, in UTF-16 code units: what matching costs by (`PathCost`). */
  size(): { names: number; characters: number; longestName: number } {
    if (this.split !== undefined) {
      let longestName = 0;
      let characters = 0;
      for (const name of this.split) {
        longestName = Math.max(longestName, name.length);
        characters += name.length;
      }
      return { names: this.split.length, characters, longestName };
    }
    // Counted without splitting: most calls are judged by rules that never look at names.
    const path = this.rooted ? this.source.slice(1) : this.source;
    if (this.rooted && path === "") return { names: 0, characters: 0, longestName: 0 };
    let names = 1;
    let longestName = 0;
    let current = 0;
    for (let index = 0; index < path.length; index++) {
      if (path.charCodeAt(index) === 47) {
        names++;
        longestName = Math.max(longestName, current);
        current = 0;
      } else current++;
    }
    return { names, characters: path.length - (names - 1), longestName: Math.max(longestName, current) };
  }

  codesOf(index: number): NameCodes {
    this.codes ??= new Array(this.names.length);
    let codes = this.codes[index];
    if (codes === undefined) {
      codes = codePoints(this.names[index] as string);
      this.codes[index] = codes;
    }
    return codes;
  }
}

function codePoints(name: string): NameCodes {
  const codes: number[] = [];
  for (let index = 0; index < name.length; index++) {
    const code = name.charCodeAt(index);
    const next = name.charCodeAt(index + 1);
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      codes.push((code - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000);
      index++;
    } else {
      codes.push(code);
    }
  }
  return codes;
}

function segmentMatches(segment: Exclude<Segment, { kind: "globstar" }>, path: GlobPath, index: number): boolean {
  return segment.kind === "literal" ? segment.text === path.names[index] : segment.matcher.matches(path.codesOf(index));
}

/**
 * Worst-case steps of matching (`match-steps.ts`), as a linear function of the path's size:
 * its names, their characters and its longest name. Linear, so the costs of many patterns
 * add up, and the cost on a given path is known before matching it.
 */
export interface PathCost {
  fixed: number;
  perName: number;
  perCharacter: number;
  perLongestName: number;
}

export const noPathCost: PathCost = { fixed: 0, perName: 0, perCharacter: 0, perLongestName: 0 };

export function addPathCosts(a: PathCost, b: PathCost): PathCost {
  return {
    fixed: a.fixed + b.fixed,
    perName: a.perName + b.perName,
    perCharacter: a.perCharacter + b.perCharacter,
    perLongestName: a.perLongestName + b.perLongestName,
  };
}

/** Steps of one test of a segment: `anchored` once, `middle` per character of the name. */
function testSteps(segment: Exclude<Segment, { kind: "globstar" }>): { anchored: number; middle: number } {
  if (segment.kind === "literal") return { anchored: matchSteps.segmentTest, middle: 0 };
  const { anchored, middle } = segment.matcher.compares;
  return { anchored: matchSteps.wildcardTest + anchored * matchSteps.compare, middle: middle * matchSteps.compare };
}

type Piece = ReadonlyArray<Exclude<Segment, { kind: "globstar" }>>;

/**
 * One brace alternative of a glob, matched against whole paths like a `*` wildcard over
 * names: `**` (any run of names, none included) plays `*`. Consecutive `**` are one. The
 * names before the first `**` must start the path and those after the last must end it;
 * each run between two `**` is found leftmost. Each name is tested at most once per segment
 * of a middle run, and once per other segment: linear in path × pattern, and far less for
 * the usual shapes (`src/**`, `**` then `*.ts`), whose cost does not grow with the path at all.
 */
export class AlternativeMatcher {
  readonly cost: PathCost;
  private readonly head: Piece;
  private readonly tail: Piece;
  private readonly middle: readonly Piece[];
  private readonly globstar: boolean;

  constructor(segments: readonly Segment[]) {
    const runs: Array<Array<Exclude<Segment, { kind: "globstar" }>>> = [[]];
    for (const segment of segments) {
      if (segment.kind === "globstar") {
        if ((runs[runs.length - 1] as unknown[]).length > 0 || runs.length === 1) runs.push([]);
      } else {
        (runs[runs.length - 1] as Array<Exclude<Segment, { kind: "globstar" }>>).push(segment);
      }
    }
    this.globstar = runs.length > 1;
    this.head = runs[0] as Piece;
    this.tail = this.globstar ? (runs[runs.length - 1] as Piece) : [];
    this.middle = runs.slice(1, -1).filter((run) => run.length > 0);
    let cost: PathCost = { ...noPathCost, fixed: matchSteps.segmentTest };
    for (const segment of [...this.head, ...this.tail]) {
      const test = testSteps(segment);
      cost = addPathCosts(cost, { ...noPathCost, fixed: test.anchored, perLongestName: test.middle });
    }
    for (const segment of this.middle.flat()) {
      const test = testSteps(segment);
      cost = addPathCosts(cost, { ...noPathCost, perName: test.anchored, perCharacter: test.middle });
    }
    this.cost = cost;
  }

  /** Whether the path's names (a rooted path's after its "/") match this alternative. */
  matches(path: GlobPath): boolean {
    const count = path.names.length;
    const head = this.head;
    const tail = this.tail;
    if (!this.globstar) return count === head.length && this.matchesRun(path, 0, head);
    const end = count - tail.length;
    if (end < head.length || !this.matchesRun(path, 0, head) || !this.matchesRun(path, end, tail)) return false;
    let at = head.length;
    for (const run of this.middle) {
      let found = -1;
      for (let start = at; start + run.length <= end; start++) {
        if (this.matchesRun(path, start, run)) {
          found = start;
          break;
        }
      }
      if (found === -1) return false;
      at = found + run.length;
    }
    return true;
  }

  private matchesRun(path: GlobPath, at: number, run: Piece): boolean {
    for (let index = 0; index < run.length; index++) if (!segmentMatches(run[index] as Piece[number], path, at + index)) return false;
    return true;
  }
}

/**
 * The pattern positions reachable after matching the names of `path` (a folder) from the
 * start, with globstars closed over: what a walker needs to know whether anything below the
 * folder may still match. Each name is tested once per live position: linear in both.
 */
export function reachableStates(segments: readonly Segment[], path: GlobPath): boolean[] {
  let states = closeOverGlobstars(segments, [true]);
  for (let name = 0; name < path.names.length; name++) {
    const next: boolean[] = [];
    let alive = false;
    for (let position = 0; position < segments.length; position++) {
      if (!states[position]) continue;
      const segment = segments[position] as Segment;
      if (segment.kind === "globstar") next[position] = alive = true;
      else if (segmentMatches(segment, path, name)) next[position + 1] = alive = true;
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
