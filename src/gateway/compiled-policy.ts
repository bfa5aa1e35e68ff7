import { setImmediate } from "node:timers/promises";
import type { ApprovalPolicy, PolicyRules } from "../core/policy.js";
import { addPathCosts, noPathCost, type PathCost } from "../workspace/glob-path.js";
import { addTextCosts, noTextCost } from "./glob.js";
import { noSteps, overBudget, policyBudget, ruleSteps, setSteps, subjectKindsOf, type CostedRule, type RuleSteps } from "./policy-cost.js";
import { CompileSlices, everyPath, isRuleCompiled, readRule, rulePathCost, type PolicyRule, type RuleCost } from "./rules.js";

/**
 * A policy's rules compiled for judging (SPEC S2, S9): its lists with identical rules kept
 * once, what matching them costs, and the rules of each tool. Policies are read afresh for
 * every claim, so a compiled policy is remembered by its content as well as by its object;
 * compiling a new one yields to the event loop (`preparePolicies`), so a policy of thousands
 * of rules never stalls a worker or an API process.
 */
export interface RuleSet {
  deny: readonly PolicyRule[];
  ask: readonly PolicyRule[];
  allow: readonly PolicyRule[];
  /** Worst-case steps of testing all of them, by the subject's size (`policy-cost.ts`). */
  cost: RuleCost;
}

export interface CompiledPolicy extends RuleSet {
  /** Its rules' steps on the reference subjects, summed per kind of subject. */
  steps: RuleSteps;
  /** Each rule with its steps, for saying which cost most. */
  costed: readonly CostedRule[];
  /** The rules whose tool part matches a tool name, memoised per name. */
  forTool(toolName: string): RuleSet;
}

/** Compiled once per policy object (policies are treated as immutable); recompiled if its `rules` object is replaced. */
const byObject = new WeakMap<ApprovalPolicy, { rules: PolicyRules | undefined; policy: CompiledPolicy }>();

/** By content, the policy compiled least recently first out: a claim reads the same policy as a new object. */
const byContent = new Map<string, CompiledPolicy>();
const maxRememberedPolicies = 256;

/**
 * A policy's rules, compiled. Rules the API refuses (`validatePolicyRules`) should not
 * reach here; a malformed one is skipped, and one refused only for its path pattern
 * (checked more strictly since it was stored) is compiled leniently, never failing open.
 * Identical rules are kept once, in the strictest list that has them: a copy in a later list
 * could never decide (deny is checked before ask, ask before allow), so it only costs time.
 * Synchronous: await `preparePolicies` first where a new policy may be large.
 */
export function compilePolicy(policy: ApprovalPolicy): CompiledPolicy {
  const known = remembered(policy);
  if (known.policy) return known.policy;
  const builder = new PolicyBuilder();
  for (const [kind, text] of ruleTexts(policy.rules)) builder.add(kind, text);
  return remember(policy, known.key, builder.build());
}

/**
 * Compiles these policies, if new, in slices that yield to the event loop (`CompileSlices`),
 * then the rules of `tools` in them. Judging afterwards finds all of it compiled.
 */
export async function preparePolicies(policies: readonly ApprovalPolicy[], tools: readonly string[] = []): Promise<void> {
  const slices = new CompileSlices();
  for (const policy of policies) {
    const known = remembered(policy);
    if (known.policy) continue;
    const builder = new PolicyBuilder();
    for (const [kind, text] of ruleTexts(policy.rules)) {
      const compiled = !isRuleCompiled(text);
      builder.add(kind, text);
      if (slices.over(compiled)) await slices.next();
    }
    remember(policy, known.key, builder.build());
  }
  for (const tool of tools) {
    await setImmediate();
    rulesForTool(policies, tool);
  }
}

function remembered(policy: ApprovalPolicy): { policy: CompiledPolicy | undefined; key: string } {
  const cached = byObject.get(policy);
  if (cached && cached.rules === policy.rules) return { policy: cached.policy, key: "" };
  const key = JSON.stringify(policy.rules ?? null);
  const known = byContent.get(key);
  if (known) {
    byContent.delete(key);
    byContent.set(key, known);
    byObject.set(policy, { rules: policy.rules, policy: known });
  }
  return { policy: known, key };
}

function remember(policy: ApprovalPolicy, key: string, compiled: CompiledPolicy): CompiledPolicy {
  if (byContent.size >= maxRememberedPolicies) byContent.delete(byContent.keys().next().value as string);
  byContent.set(key, compiled);
  byObject.set(policy, { rules: policy.rules, policy: compiled });
  return compiled;
}

type ListKind = "deny" | "ask" | "allow";

function* ruleTexts(rules: PolicyRules | undefined): Generator<[ListKind, unknown]> {
  for (const kind of ["deny", "ask", "allow"] as const) {
    const list = rules?.[kind];
    if (Array.isArray(list)) for (const text of list) yield [kind, text];
  }
}

/** A policy's lists, one rule at a time, so that compiling can yield between rules. */
class PolicyBuilder {
  private readonly lists: Record<ListKind, PolicyRule[]> = { deny: [], ask: [], allow: [] };
  private readonly costed: CostedRule[] = [];
  private readonly seen = new Set<string>();
  private cost: RuleCost = noCost;
  private steps: RuleSteps = noSteps;

  add(kind: ListKind, text: unknown): void {
    const read = readRule(text as string);
    if (!read.ok || this.seen.has(read.rule.key)) return;
    this.seen.add(read.rule.key);
    let rule = read.rule;
    // Stored before the API refused it: a deny or ask rule whose path pattern cannot be
    // compiled covers every path of its tools rather than none (S9: no rule fails open).
    if (kind !== "allow" && read.refusal !== null && rule.argument !== null && rule.argument.path === null) {
      rule = {
        ...rule,
        argument: { ...rule.argument, path: everyPath, absolute: true },
        cost: { ...rule.cost, path: rulePathCost, absolutePath: noPathCost },
      };
    }
    this.lists[kind].push(rule);
    this.cost = addCosts(this.cost, rule.cost);
    const steps = ruleSteps(rule.cost, subjectKindsOf(rule.tool.pattern));
    this.steps = { path: this.steps.path + steps.path, command: this.steps.command + steps.command, url: this.steps.url + steps.url };
    this.costed.push({ source: rule.source, steps });
  }

  build(): CompiledPolicy {
    return new Compiled(this.lists.deny, this.lists.ask, this.lists.allow, this.cost, this.steps, this.costed);
  }
}

const noCost: RuleCost = { path: noPathCost, absolutePath: noPathCost, text: noTextCost };

function addCosts(a: RuleCost, b: RuleCost): RuleCost {
  return {
    path: addPathCosts(a.path, b.path),
    absolutePath: addPathCosts(a.absolutePath, b.absolutePath),
    text: addTextCosts(a.text, b.text),
  };
}

function costOf(lists: ReadonlyArray<readonly PolicyRule[]>): RuleCost {
  const path = { ...noPathCost };
  const absolutePath = { ...noPathCost };
  const text = { ...noTextCost };
  const add = (sum: PathCost, cost: PathCost) => {
    sum.fixed += cost.fixed;
    sum.perName += cost.perName;
    sum.perCharacter += cost.perCharacter;
    sum.perLongestName += cost.perLongestName;
  };
  for (const list of lists) {
    for (const { cost } of list) {
      add(path, cost.path);
      add(absolutePath, cost.absolutePath);
      text.perText += cost.text.perText;
      text.perCharacter += cost.text.perCharacter;
    }
  }
  return { path, absolutePath, text };
}

/** Tool names are few (the registry's), so the memo stays small; it is bounded anyway. */
const maxToolsPerPolicy = 4096;

class Compiled implements CompiledPolicy {
  private readonly byTool = new Map<string, RuleSet>();

  constructor(
    readonly deny: readonly PolicyRule[],
    readonly ask: readonly PolicyRule[],
    readonly allow: readonly PolicyRule[],
    readonly cost: RuleCost,
    readonly steps: RuleSteps,
    readonly costed: readonly CostedRule[],
  ) {}

  forTool(toolName: string): RuleSet {
    let rules = this.byTool.get(toolName);
    if (rules === undefined) {
      const deny = this.deny.filter((rule) => rule.tool.test(toolName));
      const ask = this.ask.filter((rule) => rule.tool.test(toolName));
      const allow = this.allow.filter((rule) => rule.tool.test(toolName));
      rules = { deny, ask, allow, cost: costOf([deny, ask, allow]) };
      if (this.byTool.size >= maxToolsPerPolicy) this.byTool.clear();
      this.byTool.set(toolName, rules);
    }
    return rules;
  }
}

const emptyRules: RuleSet = { deny: [], ask: [], allow: [], cost: noCost };

/** Merged rule sets of two policies, by tool: the same two policies are judged call after call. */
const mergedSets = new WeakMap<CompiledPolicy, WeakMap<CompiledPolicy, Map<string, RuleSet>>>();

/** The rules of every policy that apply to a tool, in policy order (tenant, then project). */
export function rulesForTool(policies: readonly ApprovalPolicy[], toolName: string): RuleSet {
  if (policies.length === 2) {
    const [first, second] = policies.map(compilePolicy) as [CompiledPolicy, CompiledPolicy];
    let byTool = mergedSets.get(first)?.get(second);
    if (!byTool) {
      byTool = new Map();
      const bySecond = mergedSets.get(first) ?? new WeakMap<CompiledPolicy, Map<string, RuleSet>>();
      bySecond.set(second, byTool);
      mergedSets.set(first, bySecond);
    }
    let rules = byTool.get(toolName);
    if (!rules) {
      rules = mergeRules(policies, toolName);
      if (byTool.size >= maxToolsPerPolicy) byTool.clear();
      byTool.set(toolName, rules);
    }
    return rules;
  }
  return mergeRules(policies, toolName);
}

function mergeRules(policies: readonly ApprovalPolicy[], toolName: string): RuleSet {
  let single: RuleSet | null = null;
  let merged: { deny: PolicyRule[]; ask: PolicyRule[]; allow: PolicyRule[]; cost: RuleCost } | null = null;
  for (const policy of policies) {
    const rules = compilePolicy(policy).forTool(toolName);
    if (rules.deny.length + rules.ask.length + rules.allow.length === 0) continue;
    if (single === null) {
      single = rules;
      continue;
    }
    merged ??= { deny: [...single.deny], ask: [...single.ask], allow: [...single.allow], cost: single.cost };
    merged.deny.push(...rules.deny);
    merged.ask.push(...rules.ask);
    merged.allow.push(...rules.allow);
    merged.cost = addCosts(merged.cost, rules.cost);
  }
  return merged ?? single ?? emptyRules;
}

/**
 * Why a tenant's and a project's policies together cost more than the budget (S9), or null.
 * The API refuses to store such a set; the gateway judges calls under one fail-closed.
 */
export function policySetOverBudget(policies: readonly ApprovalPolicy[], what?: string): string | null {
  const compiled = policies.map(compilePolicy);
  if (setSteps(compiled.map((policy) => policy.steps)) <= policyBudget) return null;
  // Over the budget: the same answer for every call judged under these policies, so it is kept.
  const [first, ...others] = compiled;
  const known = first ? overBudgetReasons.get(first) : undefined;
  if (known && known.what === what && sameItems(known.others, others)) return known.reason;
  const reason = overBudget(
    compiled.map((policy) => ({ steps: policy.steps, rules: policy.costed })),
    what,
  );
  if (first && reason !== null) overBudgetReasons.set(first, { others, what, reason });
  return reason;
}

const overBudgetReasons = new WeakMap<CompiledPolicy, { others: readonly CompiledPolicy[]; what: string | undefined; reason: string }>();

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}
