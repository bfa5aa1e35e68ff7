import type { ApprovalPolicy } from "../../src/core/policy.js";
import { policySetOverBudget } from "../../src/gateway/compiled-policy.js";
import { policyBudget, referenceSubjects, ruleSteps, subjectKindsOf } from "../../src/gateway/policy-cost.js";
import { parseRule } from "../../src/gateway/rules.js";

/**
 * The costliest policy sets the budget admits (SPEC S9), as data: each shape is a rule
 * made distinct by its number `i` (so that identical rules, which count once, cannot
 * be the trick), repeated until the tenant's and the project's policies together reach
 * the budget, or the API's caps (1,000 rules per list). Every shape is built to match
 * none of the subjects below, so the gateway walks every rule of every list.
 */
export interface RuleShape {
  name: string;
  tool: "write" | "bash" | "web_fetch";
  rule: (i: number) => string;
}

export const ruleShapes: readonly RuleShape[] = [
  { name: "many short anchored rules", tool: "write", rule: (i) => `write(src${i}/**)` },
  { name: "a wildcard last segment", tool: "write", rule: (i) => `write(**/*${i}.pem)` },
  { name: "a literal between two **", tool: "write", rule: (i) => `write(**/d${i}/**)` },
  { name: "a run of 30 literals between two **", tool: "write", rule: (i) => `write(**/${"a/".repeat(30)}b${i}/**)` },
  { name: "a run of 30 ? between two **", tool: "write", rule: (i) => `write(**/${"?/".repeat(30)}b${i}/**)` },
  { name: "a 60-character middle piece between two **", tool: "write", rule: (i) => `write(**/*${"a".repeat(60)}b${i}*/**)` },
  { name: "many stars in the first segment", tool: "write", rule: (i) => `write(${"*a".repeat(100)}*b${i}/**)` },
  { name: "**-heavy alternatives", tool: "write", rule: (i) => `write({${"**/a/".repeat(12)}x,${"**/*a*/".repeat(8)}y}/**/z${i})` },
  { name: "classes between two **", tool: "write", rule: (i) => `write(**/[a-c][[:alpha:]]x${i}/**/[!z]*/**)` },
  { name: "absolute, with **", tool: "write", rule: (i) => `write(/srv/**/x${i}/**)` },
  { name: "a wildcard tool part", tool: "write", rule: (i) => `*(**/w${i}/**)` },
  { name: "command prefixes", tool: "bash", rule: (i) => `bash(echo xxxxxxxx${i}*)` },
  { name: "command pieces anywhere", tool: "bash", rule: (i) => `bash(*x${i}y*)` },
  { name: "command stars", tool: "bash", rule: (i) => `bash(*${"x*".repeat(100)}q${i}*)` },
  { name: "URL pieces anywhere", tool: "web_fetch", rule: (i) => `web_fetch(https://*x${i}y*)` },
];

const maxPerList = 1000;

/** The shape's rules spread over both policies and all three lists, up to the budget. */
export function worstAdmitted(shape: RuleShape): ApprovalPolicy[] {
  const rules: string[] = [];
  const total = { path: 0, command: 0, url: 0 };
  while (rules.length < 6 * maxPerList) {
    const rule = shape.rule(rules.length);
    const parsed = parseRule(rule);
    if (!parsed.ok) throw new Error(`${shape.name}: ${parsed.error}`);
    const steps = ruleSteps(parsed.rule.cost, subjectKindsOf(parsed.rule.tool.pattern));
    if (Math.max(total.path + steps.path, total.command + steps.command, total.url + steps.url) > policyBudget) break;
    total.path += steps.path;
    total.command += steps.command;
    total.url += steps.url;
    rules.push(rule);
  }
  const take = (from: number) => rules.slice(from * maxPerList, (from + 1) * maxPerList);
  const policies: ApprovalPolicy[] = [
    { rules: { deny: take(0), ask: take(1), allow: take(2) } },
    { rules: { deny: take(3), ask: take(4), allow: take(5) } },
  ];
  if (policySetOverBudget(policies) !== null) throw new Error(`${shape.name}: the filled set is over the budget`);
  return policies;
}

/** 4 KiB paths (4,095 characters, PATH_MAX less its NUL) of the shapes that cost most; `names` are within the reference. */
export const longPaths: ReadonlyArray<{ name: string; path: string; withinReference: boolean }> = [
  { name: "2,048 one-letter names", path: `${"a/".repeat(2047)}a`, withinReference: true },
  { name: "16 names of 255 a's", path: `${`${"a".repeat(255)}/`.repeat(15)}${"a".repeat(254)}`, withinReference: true },
  { name: "130 names of 30 characters", path: `${`${"a".repeat(30)}/`.repeat(132)}${"b".repeat(3)}`, withinReference: true },
  { name: "one name of 4,095 characters", path: "a".repeat(4095), withinReference: false },
];

/** A command line at the reference size: 32 sub-commands, 4 KiB of their text. */
export const longCommand = Array.from({ length: referenceSubjects.command.texts }, (_, i) => `echo ${"x".repeat(118)}${i}`).join("; ");

export const longUrl = `https://example.com/${"x".repeat(referenceSubjects.url.characters - 21)}`;
