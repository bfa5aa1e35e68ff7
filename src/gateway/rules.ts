import type { ApprovalPolicy, PolicyRules } from "../core/policy.js";
import { compilePathGlob, compileWildcard, type Wildcard } from "./glob.js";

/**
 * Policy rules (SPEC S2): `toolGlob` or `toolGlob(argumentPattern)`.
 *
 * - The tool part is a wildcard over the tool name: `web_fetch`, `mcp__github__*`.
 * - The argument pattern is matched against what the tool's approval subject names:
 *   - command: each sub-command's text (words after quote removal, joined by single
 *     spaces; a wrapper's text includes the wrapped command, and the wrapped command
 *     is a sub-command of its own, so `bash(rm *)` also catches `sudo FOO=1 rm x`);
 *     `*` matches any characters, spaces and slashes included; runs of whitespace
 *     in the pattern count as one space.
 *   - path: a picomatch-style glob (`dot: true`); a pattern starting with `/` is
 *     matched against the absolute path, any other against the path relative to
 *     the workspace (so it never matches a path outside it).
 *   - url: `*` matches any characters, over the full URL.
 *   - a tool without a subject: only rules without an argument pattern match it.
 * - A rule without an argument pattern matches every call of the tool.
 */
export interface PolicyRule {
  /** As written, for reasons shown to the model and the user. */
  source: string;
  tool: Wildcard;
  /** Null: the rule matches every call of the tool. */
  argument: RuleArgument | null;
}

export interface RuleArgument {
  pattern: string;
  /** Over a command's text and over a URL. */
  wildcard: Wildcard;
  /** Null when the pattern is not a valid glob (`[` or `{` left open): it then matches no path. */
  path: RegExp | null;
  /** Path patterns starting with `/` match absolute paths. */
  absolute: boolean;
}

export type RuleParse = { ok: true; rule: PolicyRule } | { ok: false; error: string };

const toolPart = /^[A-Za-z0-9_.:*-]+$/;

export function parseRule(text: string): RuleParse {
  if (typeof text !== "string") return { ok: false, error: "a rule must be a string" };
  const rule = text.trim();
  if (rule === "") return { ok: false, error: "the rule is empty" };
  const open = rule.indexOf("(");
  const toolGlob = open === -1 ? rule : rule.slice(0, open).trimEnd();
  if (!toolPart.test(toolGlob)) {
    return { ok: false, error: `"${text}": the tool name may hold only letters, digits, "_", "-", ".", ":" and "*" (wildcard), optionally followed by "(pattern)"` };
  }
  if (open === -1) return { ok: true, rule: { source: rule, tool: compileWildcard(toolGlob), argument: null } };
  if (!rule.endsWith(")")) return { ok: false, error: `"${text}": the argument pattern must end with ")"` };
  const pattern = rule.slice(open + 1, -1).trim().replace(/\s+/g, " ");
  if (pattern === "") return { ok: false, error: `"${text}": the argument pattern in "()" is empty; write "${toolGlob}" to match every call` };
  const glob = compilePathGlob(pattern);
  return {
    ok: true,
    rule: {
      source: rule,
      tool: compileWildcard(toolGlob),
      argument: { pattern, wildcard: compileWildcard(pattern), path: glob.ok ? glob.regex : null, absolute: pattern.startsWith("/") },
    },
  };
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
 * A policy's rules, compiled. Invalid rules are skipped: the API refuses them
 * when a policy is set (`validatePolicyRules`), so none should reach here.
 */
export function compilePolicy(policy: ApprovalPolicy): CompiledPolicy {
  const cached = compiled.get(policy);
  if (cached && cached.rules === policy.rules) return cached.policy;
  const compile = (list: readonly string[] | undefined): PolicyRule[] =>
    (list ?? []).flatMap((text) => {
      const parsed = parseRule(text);
      return parsed.ok ? [parsed.rule] : [];
    });
  const result = new Compiled(compile(policy.rules?.deny), compile(policy.rules?.ask), compile(policy.rules?.allow));
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
      rules = { deny: this.deny.filter((rule) => rule.tool.test(toolName)), ask: this.ask.filter((rule) => rule.tool.test(toolName)), allow: this.allow.filter((rule) => rule.tool.test(toolName)) };
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
