import { setImmediate } from "node:timers/promises";
import type { PolicyRules } from "../core/policy.js";
import { addPathCosts, noPathCost, type GlobPath, type PathCost } from "../workspace/glob-path.js";
import { compileGlob } from "../workspace/glob-pattern.js";
import { compileWildcard, type TextCost, type Wildcard } from "./glob.js";
import { matchSteps } from "../workspace/match-steps.js";

/**
 * Policy rules (SPEC S2, S9): `toolGlob` or `toolGlob(argumentPattern)`.
 *
 * - The tool part is a wildcard over the tool name: `web_fetch`, `mcp__github__*`.
 * - The argument pattern is matched against what the tool's approval subject names:
 *   - command: each sub-command's text (words after quote removal, joined by single
 *     spaces; a wrapper's text includes the wrapped command, and the wrapped command
 *     is a sub-command of its own, so `bash(rm *)` also catches `sudo FOO=1 rm x`);
 *     `*` matches any characters, spaces and slashes included; runs of whitespace
 *     in the pattern count as one space.
 *   - path: a glob with bash `globstar` + `dotglob` semantics (`compileGlob`): `*`, `?`
 *     and `[…]` stay within a segment, `**` as a whole segment spans zero or more
 *     segments, `{a,b}` expands first, `\` escapes. A pattern starting with `/` (every
 *     alternative of it) is matched against the absolute path, any other against the
 *     path relative to the workspace (so it never matches a path outside it); a leading
 *     `./` is dropped, and `.` alone names the workspace root.
 *   - url: `*` matches any characters, over the full URL.
 *   - a tool without a subject: only rules without an argument pattern match it.
 * - A rule without an argument pattern matches every call of the tool.
 *
 * Every pattern runs in linear time and states its worst case (S9): each path pattern is
 * capped (below), and a policy set's rules together are bounded by `policy-cost.ts`, so the
 * rules of a policy stay cheap in the batch claim, where every queued call is judged.
 */
export interface PolicyRule {
  /** As written, for reasons shown to the model and the user. */
  source: string;
  /** The rule in normal form (pattern whitespace collapsed): identical rules have one key, and a policy keeps one of them. */
  key: string;
  tool: Wildcard;
  /** Null: the rule matches every call of the tool. */
  argument: RuleArgument | null;
  /** Worst-case steps of testing the rule, by the subject's size. */
  cost: RuleCost;
}

export interface RuleCost {
  /** On a path relative to the workspace (and any rule's own test of the call). */
  path: PathCost;
  /** On the absolute path, for a pattern that starts with "/": it may be longer than the relative one. */
  absolutePath: PathCost;
  text: TextCost;
}

/** A compiled path pattern; `matches` takes a relative path, or an absolute one when the pattern is absolute. */
export interface PathMatcher {
  matches(path: string): boolean;
  /** The same, for a path split once for all the rules judging it. */
  matchesPath(path: GlobPath): boolean;
  readonly cost: PathCost;
}

export interface RuleArgument {
  pattern: string;
  /** Over a command's text and over a URL. */
  wildcard: Wildcard;
  /** Null when the pattern is not a path glob (a command or URL pattern such as `rm -rf /`): it then matches no path. */
  path: PathMatcher | null;
  /** The path pattern is absolute (starts with `/`): it matches absolute paths. */
  absolute: boolean;
}

export type RuleParse = { ok: true; rule: PolicyRule } | { ok: false; error: string };

const toolPart = /^[A-Za-z0-9_.:*-]+$/;

/**
 * Caps on a rule's path pattern, checked when a policy is set. A pattern's worst case grows
 * with its expanded length; the policy budget (`policy-cost.ts`) bounds the rules together.
 */
const ruleGlobLimits = { maxPatternLength: 256, maxAlternatives: 64, maxExpandedLength: 512 } as const;

/**
 * The built-in tools whose approval subject is a path (`src/tools/builtin/`). A rule
 * whose tool part matches one of them must have a pattern that compiles as a path glob.
 */
const pathToolNames = ["read", "write", "edit", "delete", "list"] as const;

/** The workspace root, as rules see it (`RulePath.relative` is "." there). */
const workspaceRoot: PathMatcher = {
  matches: (path) => path === ".",
  matchesPath: (path) => !path.rooted && path.names.length === 1 && path.names[0] === ".",
  cost: { ...noPathCost, fixed: matchSteps.segmentTest },
};

/** Matches every path: what a deny or ask rule stands for when its path pattern cannot be compiled. */
export const everyPath: PathMatcher = { matches: () => true, matchesPath: () => true, cost: noPathCost };

/** What testing a rule costs before its pattern, on a path; a command or URL wildcard's own cost includes it. */
export const rulePathCost: PathCost = { ...noPathCost, fixed: matchSteps.rule };

/** A rule without an argument pattern: one test per call, or per sub-command. */
const wholeToolCost: RuleCost = { path: rulePathCost, absolutePath: noPathCost, text: { perText: matchSteps.textTest, perCharacter: 0 } };

/** A rule as read, with why the API would refuse it (null when it would not). */
export type RuleRead = { ok: true; rule: PolicyRule; refusal: string | null } | { ok: false; error: string };

/** Parses and compiles one rule; the API refuses a policy with any rule this refuses. */
export function parseRule(text: string): RuleParse {
  const read = readRule(text);
  if (!read.ok) return read;
  return read.refusal === null ? { ok: true, rule: read.rule } : { ok: false, error: read.refusal };
}

/**
 * Rules as read, by text: a rule is a pure function of its text, and the same rules come
 * back in every claim's policies. Bounded: the rule used least recently goes first.
 */
const readByText = new Map<string, RuleRead>();
const maxRememberedRules = 20_000;

/** A rule by its text, compiled once (see above). */
export function readRule(text: string): RuleRead {
  if (typeof text !== "string") return { ok: false, error: "a rule must be a string" };
  let read = readByText.get(text);
  if (read === undefined) {
    read = compileRule(text);
    if (readByText.size >= maxRememberedRules) readByText.delete(readByText.keys().next().value as string);
  } else {
    readByText.delete(text);
  }
  readByText.set(text, read);
  return read;
}

/** A rule text already compiled and remembered. */
export function isRuleCompiled(text: unknown): boolean {
  return typeof text === "string" && readByText.has(text);
}

/**
 * Where compiling yields to the event loop (S9): after about 2 ms, or 16 rules compiled,
 * whichever comes first. A rule takes 5-100 µs to compile and a policy set may hold 6,000,
 * so compiling costs an API or a worker process CPU, never a stall.
 */
export class CompileSlices {
  private started = performance.now();
  private compiled = 0;

  /** Whether the slice is over after one more rule; `compiled`: it was compiled, not remembered. */
  over(compiled: boolean): boolean {
    if (compiled) this.compiled++;
    return this.compiled >= 16 || performance.now() - this.started > 2;
  }

  async next(): Promise<void> {
    await setImmediate();
    this.started = performance.now();
    this.compiled = 0;
  }
}

/** Compiles these rule texts in slices (`CompileSlices`); `parseRule` then answers from memory. */
export async function prepareRules(texts: readonly unknown[]): Promise<void> {
  const slices = new CompileSlices();
  for (const text of texts) {
    if (typeof text !== "string" || readByText.has(text)) continue;
    readRule(text);
    if (slices.over(true)) await slices.next();
  }
}

function compileRule(text: string): RuleRead {
  const rule = text.trim();
  if (rule === "") return { ok: false, error: "the rule is empty" };
  const open = rule.indexOf("(");
  const toolGlob = open === -1 ? rule : rule.slice(0, open).trimEnd();
  if (!toolPart.test(toolGlob)) {
    return {
      ok: false,
      error: `"${text}": the tool name may hold only letters, digits, "_", "-", ".", ":" and "*" (wildcard), optionally followed by "(pattern)"`,
    };
  }
  const tool = compileWildcard(toolGlob);
  if (open === -1) return { ok: true, rule: { source: rule, key: toolGlob, tool, argument: null, cost: wholeToolCost }, refusal: null };
  if (!rule.endsWith(")")) return { ok: false, error: `"${text}": the argument pattern must end with ")"` };
  const pattern = rule
    .slice(open + 1, -1)
    .trim()
    .replace(/\s+/g, " ");
  if (pattern === "")
    return { ok: false, error: `"${text}": the argument pattern in "()" is empty; write "${toolGlob}" to match every call` };
  const { path, absolute, problem } = compilePathPattern(pattern);
  // Rules are shared across subject kinds, and most command and URL patterns are no path
  // globs (`rm -rf /`, `https://x/*`). A pattern that is not one matches no path, which is
  // its meaning for commands and URLs but a fail-open for a path rule. So a pattern that
  // does not compile is refused only where it can be meant for paths: the tool part
  // matches a built-in path tool, and it is not URL-shaped (a path never holds "://").
  const pathTools = pathToolNames.filter((name) => tool.test(name));
  const refusal =
    problem !== null && pathTools.length > 0 && !pattern.includes("://")
      ? `"${text}": "${pattern}" is not a usable path glob, and ${formatList(pathTools)} ${pathTools.length > 1 ? "take" : "takes"} paths: ${problem}` +
        (toolGlob.includes("*") ? ` A rule meant for commands or URLs should name its tool, e.g. "bash(${pattern})".` : "")
      : null;
  const wildcard = compileWildcard(pattern);
  return {
    ok: true,
    rule: {
      source: rule,
      key: `${toolGlob}(${pattern})`,
      tool,
      argument: { pattern, wildcard, path, absolute },
      cost: {
        path: absolute ? rulePathCost : addPathCosts(rulePathCost, path?.cost ?? noPathCost),
        absolutePath: absolute ? (path?.cost ?? noPathCost) : noPathCost,
        text: wildcard.cost,
      },
    },
    refusal,
  };
}

/**
 * A rule's pattern as a path glob under the rule caps, with the reason it is not one. A
 * pattern refused only for a cap still compiles under `compileGlob`'s own (still linear)
 * caps, so a rule stored before these were checked keeps its meaning.
 */
function compilePathPattern(text: string): { path: PathMatcher | null; absolute: boolean; problem: string | null } {
  const pattern = text.replace(/^(?:\.\/)+(?=.)/, "");
  if (pattern === ".") return { path: workspaceRoot, absolute: false, problem: null };
  const glob = compileGlob(pattern, { absolute: "allow", ...ruleGlobLimits });
  if (glob.ok) return { path: glob, absolute: glob.absolute, problem: null };
  const problem =
    pattern.length > ruleGlobLimits.maxPatternLength
      ? `it is ${pattern.length} characters long; path patterns in rules may have at most ${ruleGlobLimits.maxPatternLength}, so that every rule is matched in bounded time.`
      : glob.message;
  const uncapped = compileGlob(pattern, { absolute: "allow" });
  if (uncapped.ok) return { path: uncapped, absolute: uncapped.absolute, problem };
  return { path: null, absolute: false, problem };
}

function formatList(names: readonly string[]): string {
  return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

/** Every problem in a policy's rules, for the API to refuse the policy when it is set. Empty when valid. */
export function validatePolicyRules(rules: PolicyRules | undefined): string[] {
  const errors: string[] = [];
  if (rules === undefined) return errors;
  for (const kind of ["deny", "ask", "allow"] as const) {
    const list = rules[kind];
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      errors.push(`${kind}: must be a list of rule strings`);
      continue;
    }
    for (const [index, text] of list.entries()) {
      const parsed = parseRule(text);
      if (!parsed.ok) errors.push(`${kind}[${index}]: ${parsed.error}`);
    }
  }
  return errors;
}

/** A path as rules see it, split once for all of them: relative to the workspace when inside it, always absolute too. */
export interface RulePath {
  relative: GlobPath | null;
  absolute: GlobPath;
}

export function matchesPath(argument: RuleArgument, target: RulePath): boolean {
  if (argument.path === null) return false;
  if (argument.absolute) return argument.path.matchesPath(target.absolute);
  return target.relative !== null && argument.path.matchesPath(target.relative);
}
