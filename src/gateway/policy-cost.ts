import type { PathCost } from "../workspace/glob-path.js";
import type { TextCost } from "./glob.js";

/**
 * What matching a policy's rules may cost (SPEC S9: no rule can stall a process). Every
 * compiled pattern states its worst case as a linear function of the subject's size
 * (`PathCost`, `TextCost`), in steps (`match-steps.ts`: about a nanosecond each). The
 * costs of rules add up, so the worst case of a whole policy set is known without running
 * it, both when a policy is written and before each call is judged:
 *
 * - A tenant's and a project's policies together may cost at most `policyBudget` steps on
 *   the reference subjects below; `PUT` refuses more (400, with the cost and the costliest
 *   rules), and a set stored before the budget existed is judged fail-closed (asks, or
 *   denies where deny rules apply; never allows).
 * - A call is judged only when its rules cost at most `policyBudget` on its own subject; a
 *   longer subject than the references (a command of thousands of sub-commands, a name of
 *   more than 255 characters) is judged fail-closed when its rules cannot afford it.
 *
 * Identical rules count once (`compiled-policy.ts` keeps one). Measured on the loaded 2-core
 * build machine (`test/gateway/policy-cost.unit.test.ts`), the costliest admitted set of each
 * shape judges a 4 KiB path in 1-3 ms of CPU, once V8 has optimized the matcher; the same
 * sets took seconds before the budget (a step job judged for 21 s;
 * docs/decisions/0015-policy-cost-budget.md).
 */
export const policyBudget = 3_000_000;

/** The subjects an admitted policy set is guaranteed to judge in full. */
export const referenceSubjects = {
  /** PATH_MAX: 4,096 characters, so at most 2,048 names; names at most 255 characters (NAME_MAX). */
  path: { names: 2048, characters: 4096, longestName: 255 },
  /** A command line of 32 sub-commands with 4 KiB of text in all (heredoc bodies are not sub-command text). */
  command: { texts: 32, characters: 4096 },
  url: { texts: 1, characters: 4096 },
} as const;

export interface PathSize {
  names: number;
  characters: number;
  longestName: number;
}

export interface TextSize {
  texts: number;
  characters: number;
}

export function pathSteps(cost: PathCost, size: PathSize): number {
  return cost.fixed + cost.perName * size.names + cost.perCharacter * size.characters + cost.perLongestName * size.longestName;
}

export function textSteps(cost: TextCost, size: TextSize): number {
  return cost.perText * size.texts + cost.perCharacter * size.characters;
}

/** What one rule costs on the reference subjects: its path pattern on a path, its wildcard on a command line or a URL. */
export interface RuleSteps {
  path: number;
  command: number;
  url: number;
}

export type SubjectKind = keyof RuleSteps;

const everyKind: ReadonlySet<SubjectKind> = new Set(["path", "command", "url"]);

/**
 * The kinds of subject a rule's tool part can meet: a built-in tool's own (`bash` judges
 * command lines, `write` paths), or every kind for a wildcard or any other tool, whose
 * subject is not known here.
 */
const builtinSubjects: ReadonlyMap<string, SubjectKind> = new Map([
  ["read", "path"],
  ["write", "path"],
  ["edit", "path"],
  ["delete", "path"],
  ["list", "path"],
  ["bash", "command"],
  ["web_fetch", "url"],
]);

export function subjectKindsOf(toolPart: string): ReadonlySet<SubjectKind> {
  const kind = toolPart.includes("*") ? undefined : builtinSubjects.get(toolPart);
  return kind === undefined ? everyKind : new Set([kind]);
}

export function ruleSteps(
  cost: { path: PathCost; absolutePath: PathCost; text: TextCost },
  kinds: ReadonlySet<SubjectKind> = everyKind,
): RuleSteps {
  return {
    path: kinds.has("path") ? pathSteps(cost.path, referenceSubjects.path) + pathSteps(cost.absolutePath, referenceSubjects.path) : 0,
    command: kinds.has("command") ? textSteps(cost.text, referenceSubjects.command) : 0,
    url: kinds.has("url") ? textSteps(cost.text, referenceSubjects.url) : 0,
  };
}

function addSteps(a: RuleSteps, b: RuleSteps): RuleSteps {
  return { path: a.path + b.path, command: a.command + b.command, url: a.url + b.url };
}

export const noSteps: RuleSteps = { path: 0, command: 0, url: 0 };

function sumSteps(parts: readonly RuleSteps[]): RuleSteps {
  return parts.reduce(addSteps, noSteps);
}

/** A policy set's cost: per kind of subject, the sum over its rules; the set costs its costliest kind (a call has one subject). */
export function setSteps(parts: readonly RuleSteps[]): number {
  const sum = sumSteps(parts);
  return Math.max(sum.path, sum.command, sum.url);
}

/** Rules as the cost check sees them: their text and their steps. */
export interface CostedRule {
  source: string;
  steps: RuleSteps;
}

/**
 * Why a policy set is over the budget, for the API's 400 and the gateway's fail-closed
 * verdicts; null when it is within. `policies`: the tenant's, then the project's.
 */
export function overBudget(
  sets: ReadonlyArray<{ steps: RuleSteps; rules: readonly CostedRule[] }>,
  what = "The approval policies of this tenant and project",
): string | null {
  const steps = setSteps(sets.map((set) => set.steps));
  if (steps <= policyBudget) return null;
  const costliest = sets
    .flatMap((set) => set.rules)
    .map((rule) => ({ source: rule.source, steps: Math.max(rule.steps.path, rule.steps.command, rule.steps.url) }))
    .sort((a, b) => b.steps - a.steps)
    .slice(0, 3)
    .map((rule) => `"${rule.source.length > 80 ? `${rule.source.slice(0, 80)}…` : rule.source}" (${rule.steps.toLocaleString("en-US")})`);
  return (
    `${what} cost ${steps.toLocaleString("en-US")} steps to match against the longest argument they must judge (a 4,096-character path, a command line of 32 sub-commands and 4 KiB, a 4 KiB URL), ` +
    `over the budget of ${policyBudget.toLocaleString("en-US")} for a tenant's and a project's policies together (SPEC S9). ` +
    `Remove rules, or simplify them: a "**" between other segments and a "*" between literal text cost most. Costliest: ${costliest.join(", ")}.`
  );
}
