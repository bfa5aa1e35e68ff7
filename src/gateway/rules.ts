import type { ApprovalPolicy, PolicyRules } from "../core/policy.js";
import { compileGlob } from "../workspace/glob-pattern.js";
import { compileWildcard, type Wildcard } from "./glob.js";

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
 * Every pattern runs in linear time (S9). Path patterns are capped (below) so that the
 * rules of a policy stay cheap in the batch claim, where every queued call is judged.
 */
export interface PolicyRule {
  /** As written, for reasons shown to the model and the user. */
  source: string;
  tool: Wildcard;
  /** Null: the rule matches every call of the tool. */
  argument: RuleArgument | null;
}

/** A compiled path pattern; `test` takes a relative path, or an absolute one when the pattern is absolute. */
export interface PathMatcher {
  test(path: string): boolean;
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
 * Caps on a rule's path pattern, checked when a policy is set. Matching costs the path's
 * segments × the pattern's live segments (at most half its expanded length), so these
 * bound each rule however it is written: the costliest rule they admit takes 10-20 ms
 * against a 4096-character path, typical rules microseconds.
 */
const ruleGlobLimits = { maxPatternLength: 256, maxAlternatives: 64, maxExpandedLength: 512 } as const;

/**
 * The built-in tools whose approval subject is a path (`src/tools/builtin/`). A rule
 * whose tool part matches one of them must have a pattern that compiles as a path glob.
 */
const pathToolNames = ["read", "write", "edit", "delete", "list"] as const;

/** The workspace root, as rules see it (`RulePath.relative` is "." there). */
const workspaceRoot: PathMatcher = { test: (path) => path === "." };

/** Matches every path: what a deny or ask rule stands for when its path pattern cannot be compiled. */
const everyPath: PathMatcher = { test: () => true };

/** A rule as read, with why the API would refuse it (null when it would not). */
type RuleRead = { ok: true; rule: PolicyRule; refusal: string | null } | { ok: false; error: string };

/** Parses and compiles one rule; the API refuses a policy with any rule this refuses. */
export function parseRule(text: string): RuleParse {
  const read = readRule(text);
  if (!read.ok) return read;
  return read.refusal === null ? { ok: true, rule: read.rule } : { ok: false, error: read.refusal };
}

/**
 * Rules as read, by text. Policies are loaded afresh for each batch claim, so the
 * per-policy memo below alone would compile every rule (RE2 programs included) again
 * each time; a rule is a pure function of its text. Bounded: cleared when full.
 */
const readByText = new Map<string, RuleRead>();
const maxRememberedRules = 10_000;

function readRule(text: string): RuleRead {
  if (typeof text !== "string") return { ok: false, error: "a rule must be a string" };
  let read = readByText.get(text);
  if (read === undefined) {
    read = compileRule(text);
    if (readByText.size >= maxRememberedRules) readByText.clear();
    readByText.set(text, read);
  }
  return read;
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
  if (open === -1) return { ok: true, rule: { source: rule, tool, argument: null }, refusal: null };
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
  return { ok: true, rule: { source: rule, tool, argument: { pattern, wildcard: compileWildcard(pattern), path, absolute } }, refusal };
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
  if (glob.ok) return { path: { test: (path) => glob.matches(path) }, absolute: glob.absolute, problem: null };
  const problem =
    pattern.length > ruleGlobLimits.maxPatternLength
      ? `it is ${pattern.length} characters long; path patterns in rules may have at most ${ruleGlobLimits.maxPatternLength}, so that every rule is matched in bounded time.`
      : glob.message;
  const uncapped = compileGlob(pattern, { absolute: "allow" });
  if (uncapped.ok) return { path: { test: (path) => uncapped.matches(path) }, absolute: uncapped.absolute, problem };
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

export interface RuleSet {
  deny: readonly PolicyRule[];
  ask: readonly PolicyRule[];
  allow: readonly PolicyRule[];
}

export interface CompiledPolicy extends RuleSet {
  /** The rules whose tool part matches a tool name, memoised per name. */
  forTool(toolName: string): RuleSet;
}

/** Compiled once per policy object (policies are treated as immutable); recompiled if its `rules` object is replaced. */
const compiled = new WeakMap<ApprovalPolicy, { rules: PolicyRules | undefined; policy: CompiledPolicy }>();

/**
 * A policy's rules, compiled. Rules the API refuses (`validatePolicyRules`) should not
 * reach here; a malformed one is skipped, and one refused only for its path pattern
 * (checked more strictly since it was stored) is compiled leniently, never failing open.
 */
export function compilePolicy(policy: ApprovalPolicy): CompiledPolicy {
  const cached = compiled.get(policy);
  if (cached && cached.rules === policy.rules) return cached.policy;
  const compile = (list: readonly string[] | undefined, failClosed: boolean): PolicyRule[] =>
    (list ?? []).flatMap((text) => {
      const read = readRule(text);
      if (!read.ok) return [];
      const { rule, refusal } = read;
      // Stored before the API refused it: a deny or ask rule whose path pattern cannot be
      // compiled covers every path of its tools rather than none (S9: no rule fails open).
      if (failClosed && refusal !== null && rule.argument !== null && rule.argument.path === null) {
        return [{ ...rule, argument: { ...rule.argument, path: everyPath, absolute: true } }];
      }
      return [rule];
    });
  const result = new Compiled(compile(policy.rules?.deny, true), compile(policy.rules?.ask, true), compile(policy.rules?.allow, false));
  compiled.set(policy, { rules: policy.rules, policy: result });
  return result;
}

/** Tool names are few (the registry's), so the memo stays small; it is bounded anyway. */
const maxToolsPerPolicy = 4096;

class Compiled implements CompiledPolicy {
  private readonly byTool = new Map<string, RuleSet>();

  constructor(
    readonly deny: readonly PolicyRule[],
    readonly ask: readonly PolicyRule[],
    readonly allow: readonly PolicyRule[],
  ) {}

  forTool(toolName: string): RuleSet {
    let rules = this.byTool.get(toolName);
    if (rules === undefined) {
      rules = {
        deny: this.deny.filter((rule) => rule.tool.test(toolName)),
        ask: this.ask.filter((rule) => rule.tool.test(toolName)),
        allow: this.allow.filter((rule) => rule.tool.test(toolName)),
      };
      if (this.byTool.size >= maxToolsPerPolicy) this.byTool.clear();
      this.byTool.set(toolName, rules);
    }
    return rules;
  }
}

const emptyRules: RuleSet = { deny: [], ask: [], allow: [] };

/** The rules of every policy that apply to a tool, in policy order (tenant, then project). */
export function rulesForTool(policies: readonly ApprovalPolicy[], toolName: string): RuleSet {
  let single: RuleSet | null = null;
  let merged: { deny: PolicyRule[]; ask: PolicyRule[]; allow: PolicyRule[] } | null = null;
  for (const policy of policies) {
    const rules = compilePolicy(policy).forTool(toolName);
    if (rules.deny.length + rules.ask.length + rules.allow.length === 0) continue;
    if (single === null) {
      single = rules;
      continue;
    }
    merged ??= { deny: [...single.deny], ask: [...single.ask], allow: [...single.allow] };
    merged.deny.push(...rules.deny);
    merged.ask.push(...rules.ask);
    merged.allow.push(...rules.allow);
  }
  return merged ?? single ?? emptyRules;
}

/** A path as rules see it: relative to the workspace when inside it, always absolute too. */
export interface RulePath {
  relative: string | null;
  absolute: string;
}

export function matchesPath(argument: RuleArgument, target: RulePath): boolean {
  if (argument.path === null) return false;
  if (argument.absolute) return argument.path.test(target.absolute);
  return target.relative !== null && argument.path.test(target.relative);
}
