import path from "node:path";
import type { ApprovalPolicy } from "../core/policy.js";
import type { ApprovalSubject } from "../core/tool-contract.js";
import { GlobPath } from "../workspace/glob-path.js";
import { policyBudget, pathSteps, textSteps } from "./policy-cost.js";
import { policySetOverBudget, rulesForTool, type RuleSet } from "./compiled-policy.js";
import { matchesPath, type PolicyRule, type RulePath } from "./rules.js";
import { analyzeShell, type ShellSubCommand } from "../shell/shell-analysis.js";
import type { JudgeInput, Verdict } from "./verdict.js";

/**
 * The approval gateway's decision for one tool call (SPEC S1, S2, S5, F4): pure,
 * no I/O, microseconds. Order:
 *
 * 1. A matching `deny` rule denies, in every mode (an organisation's deny is absolute).
 * 2. Outside Full Access, a permanent delete in a shell command is denied (F4).
 * 3. Full Access allows everything else, with the network.
 * 4. A matching `ask` rule asks; then a matching `allow` rule allows.
 * 5. Otherwise the mode decides: Manual asks for everything but reads inside the
 *    workspace; Auto allows reads and writes inside the workspace and shell
 *    commands that reach nothing outside it, nor the network (unless the policy
 *    allows it), nor anything dangerous, and lose no data the trash would not
 *    keep (`git reset --hard`, `: > f`) nor run what the gateway cannot see (a
 *    script file, a variable, an unknown git alias) (S11).
 *
 * A shell command is judged per sub-command (`npm test && curl x` is two), and
 * its redirections on their own; the strictest answer wins (deny > ask > allow),
 * and the first sub-command with it gives the reason. Rules apply in policy
 * order (tenant, then project); within a class the first match is reported.
 * A line that cannot be parsed asks; where argument-pattern deny rules apply to
 * the tool it is denied instead, in every mode, since they cannot be checked.
 * Deny rules match what is written: a program only known at run time (`$CMD`,
 * `eval "$X"`) asks outside Full Access, but no rule can recognise it.
 *
 * Rules are matched only when their worst case fits the policy budget (S9,
 * `policy-cost.ts`): a policy set over it, or a subject too long for its rules,
 * is judged fail-closed (`failClosed`), in microseconds.
 */
export function judgeCall(input: JudgeInput): Verdict {
  const rules = rulesForTool(input.policies, input.tool.name);
  const networkAllowed = policyAllowsNetwork(input.policies);
  const unaffordable = hasRules(rules) ? policySetOverBudget(input.policies) : null;
  return input.subject.kind === "command"
    ? judgeCommand(input, input.subject.command, rules, networkAllowed, unaffordable)
    : judgeSubject(input, input.subject, rules, networkAllowed, unaffordable);
}

function hasRules(rules: RuleSet): boolean {
  return rules.deny.length + rules.ask.length + rules.allow.length > 0;
}

/**
 * The verdict when the rules cannot be matched in bounded time (S9): never allowed by a
 * rule. A whole-tool deny rule still denies; other deny rules cannot be checked, so the call
 * is denied where the tool has any; otherwise Full Access allows (only deny rules bind
 * there) and the other modes ask, saying why.
 */
function failClosed(mode: JudgeInput["mode"], rules: RuleSet, reason: string, network: boolean): Verdict {
  const wholeDeny = firstWholeTool(rules.deny);
  if (wholeDeny) return { decision: "deny", reason: deniedBy(wholeDeny, "") };
  if (rules.deny.length > 0) return { decision: "deny", reason: `${reason} The policy's deny rules cannot be checked, so it is denied.` };
  if (mode === "full_access") return { decision: "allow", network: true };
  return { decision: "ask", reason: `${reason} A person must judge it.`, network };
}

/** Why this subject's rules cost more than the budget, or null (S9). */
function tooCostly(steps: number, what: string): string | null {
  if (steps <= policyBudget) return null;
  return `The ${what} is too long to be checked against the policy's rules in bounded time (${Math.ceil(steps).toLocaleString("en-US")} steps, over the budget of ${policyBudget.toLocaleString("en-US")}).`;
}

/** The network is allowed when some policy says so and none forbids it explicitly. */
function policyAllowsNetwork(policies: readonly ApprovalPolicy[]): boolean {
  let allowed = false;
  for (const policy of policies) {
    if (policy.network === false) return false;
    if (policy.network === true) allowed = true;
  }
  return allowed;
}

function deniedBy(rule: PolicyRule, what: string): string {
  return `Denied by the policy rule "${rule.source}"${what}.`;
}

function askedBy(rule: PolicyRule, what: string): string {
  return `The policy rule "${rule.source}" asks for approval${what}.`;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

// ---------------------------------------------------------------- paths, URLs, no subject

type Target = { kind: "path"; shown: string; path: RulePath; inside: boolean } | { kind: "url"; url: string } | { kind: "none" };

function pathTarget(shown: string, relative: string | null, absolute: string, inside: boolean): Target {
  return {
    kind: "path",
    shown,
    path: { relative: relative === null ? null : GlobPath.of(relative), absolute: GlobPath.of(absolute) },
    inside,
  };
}

/** Segments that need node:path to resolve: `.`, `..`, empty ones (`a//b`), a trailing slash. */
const needsResolve = /(?:^|\/)\.{1,2}(?:\/|$)|\/\/|\/$/;

function targetOf(subject: Exclude<ApprovalSubject, { kind: "command" }>, workspaceDir: string): Target {
  if (subject.kind === "url") return { kind: "url", url: subject.url };
  if (subject.kind === "none") return { kind: "none" };
  const requested = subject.path;
  // Lexical only: symbolic links leading out are the tool's own check (resolveWorkspacePath).
  if (requested !== "" && !needsResolve.test(requested) && !workspaceDir.endsWith("/")) {
    // The common shapes, without node:path: `src/a.ts`, `/ws/src/a.ts`, `/etc/x`.
    if (!requested.startsWith("/")) return pathTarget(requested, requested, `${workspaceDir}/${requested}`, true);
    if (requested === workspaceDir) return pathTarget(requested, ".", requested, true);
    if (requested.startsWith(`${workspaceDir}/`)) return pathTarget(requested, requested.slice(workspaceDir.length + 1), requested, true);
    return pathTarget(requested, null, requested, false);
  }
  const absolute = path.resolve(workspaceDir, requested);
  const inside = isInside(workspaceDir, absolute);
  const relative = inside ? path.relative(workspaceDir, absolute).split(path.sep).join("/") || "." : null;
  return pathTarget(requested, relative, absolute, inside);
}

/** Steps of matching this target against these rules, at worst. */
function targetSteps(rules: RuleSet, target: Target): number {
  if (target.kind === "path") {
    const none = { names: 0, characters: 0, longestName: 0 };
    return (
      pathSteps(rules.cost.path, target.path.relative?.size() ?? none) + pathSteps(rules.cost.absolutePath, target.path.absolute.size())
    );
  }
  if (target.kind === "url") return textSteps(rules.cost.text, { texts: 1, characters: target.url.length });
  return rules.deny.length + rules.ask.length + rules.allow.length;
}

/** The first rule matching the target; one tight loop, as a policy may hold thousands of rules (S9). */
function firstMatching(rules: readonly PolicyRule[], target: Target): PolicyRule | undefined {
  for (const rule of rules) {
    const argument = rule.argument;
    if (argument === null) return rule;
    if (target.kind === "path" ? matchesPath(argument, target.path) : target.kind === "url" && argument.wildcard.test(target.url))
      return rule;
  }
  return undefined;
}

function targetShown(target: Target): string {
  return target.kind === "path" ? ` on ${quote(target.shown)}` : target.kind === "url" ? ` on ${quote(target.url)}` : "";
}

function judgeSubject(
  input: JudgeInput,
  subject: Exclude<ApprovalSubject, { kind: "command" }>,
  rules: RuleSet,
  networkAllowed: boolean,
  unaffordable: string | null,
): Verdict {
  const { mode, tool } = input;
  const target = targetOf(subject, input.workspaceDir);
  const network = tool.sideEffect === "network" || target.kind === "url" || (tool.sideEffect === "exec" && networkAllowed);
  const problem = unaffordable ?? (hasRules(rules) ? tooCostly(targetSteps(rules, target), target.kind === "url" ? "URL" : "path") : null);
  if (problem !== null) return failClosed(mode, rules, problem, network);
  const denied = firstMatching(rules.deny, target);
  if (denied) return { decision: "deny", reason: deniedBy(denied, targetShown(target)) };
  if (mode === "full_access") return { decision: "allow", network: true };
  const asked = firstMatching(rules.ask, target);
  if (asked) return { decision: "ask", reason: askedBy(asked, targetShown(target)), network };
  if (firstMatching(rules.allow, target)) return { decision: "allow", network };
  const reason = modeDefault(mode, tool.name, tool.sideEffect, target, networkAllowed);
  return reason === null ? { decision: "allow", network } : { decision: "ask", reason, network };
}

/** What Manual and Auto ask for when no rule decides; null allows. */
function modeDefault(
  mode: "manual" | "auto",
  tool: string,
  sideEffect: JudgeInput["tool"]["sideEffect"],
  target: Target,
  networkAllowed: boolean,
): string | null {
  const outside = target.kind === "path" && !target.inside ? target.shown : null;
  if (sideEffect === "read") return outside === null ? null : `${tool} reads ${quote(outside)}, outside the workspace.`;
  if (mode === "manual") return `Manual mode asks before every ${tool} call${targetShown(target)}.`;
  switch (sideEffect) {
    case "write":
      if (target.kind !== "path") return `Auto mode cannot tell where ${tool} writes.`;
      return outside === null ? null : `${tool} writes ${quote(outside)}, outside the workspace.`;
    case "network":
      return networkAllowed ? null : `${tool} reaches the network${target.kind === "url" ? ` (${quote(target.url)})` : ""}.`;
    case "exec":
      return null;
    case "other":
      return `Auto mode asks before ${tool}, whose effects it cannot judge.`;
  }
}

// ---------------------------------------------------------------- shell commands

function firstWholeTool(rules: readonly PolicyRule[]): PolicyRule | undefined {
  for (const rule of rules) if (rule.argument === null) return rule;
  return undefined;
}

function judgeCommand(input: JudgeInput, command: string, rules: RuleSet, networkAllowed: boolean, unaffordable: string | null): Verdict {
  const { mode } = input;
  // Rules without an argument pattern cover the whole call, redirections included.
  const wholeDeny = firstWholeTool(rules.deny);
  if (wholeDeny) return { decision: "deny", reason: deniedBy(wholeDeny, "") };
  const analysis = analyzeShell(command, input.workspaceDir);
  // Deny rules are absolute: a line (or a nested `sh -c` script) they cannot be checked against is refused.
  const patternDeny = rules.deny.length > 0;
  if (!analysis.parsed) {
    if (patternDeny)
      return {
        decision: "deny",
        reason: `The command could not be parsed (${analysis.error}), so the policy's deny rules cannot be checked; rewrite it.`,
      };
    if (mode === "full_access") return { decision: "allow", network: true };
    if (unaffordable !== null) return failClosed(mode, rules, unaffordable, networkAllowed);
    const wholeAsk = firstWholeTool(rules.ask);
    if (wholeAsk) return { decision: "ask", reason: askedBy(wholeAsk, ""), network: networkAllowed };
    if (firstWholeTool(rules.allow)) return { decision: "allow", network: networkAllowed };
    return {
      decision: "ask",
      reason: `The command could not be parsed (${analysis.error}), so it cannot be judged.`,
      network: networkAllowed,
    };
  }
  const network = mode === "full_access" || analysis.network || networkAllowed;
  const background = input.subject.kind === "command" && input.subject.background === true;
  let firstAsk: string | null = null;
  /** What in a background command may change files unrecorded; asked about when nothing else asks. */
  let unrecorded: string | null = null;
  // A line that runs nothing (a comment) is judged as one command, so Manual still asks.
  const units: readonly ShellSubCommand[] =
    analysis.commands.length > 0 || analysis.redirections.length > 0
      ? analysis.commands
      : [{ text: command.trim(), program: "", wrapper: false, findings: [], changesFiles: null }];
  const problem = unaffordable ?? (hasRules(rules) ? tooCostly(unitsSteps(rules, units), "command line") : null);
  if (problem !== null) {
    // Still never ask about a call that cannot run (S11): bash refuses permanent deletes itself.
    const refused = mode === "full_access" ? undefined : permanentDeleteOf(units);
    return refused ? { decision: "deny", reason: refused } : failClosed(mode, rules, problem, network);
  }
  for (const unit of units) {
    if (patternDeny && unit.findings.some((finding) => finding.kind === "unparsed")) {
      return {
        decision: "deny",
        reason: `${quote(unit.text)} could not be parsed, so the policy's deny rules cannot be checked; rewrite it.`,
      };
    }
    const verdict = judgeSubCommand(unit, mode, rules, networkAllowed);
    if (verdict.decision === "deny") return { decision: "deny", reason: verdict.reason };
    if (verdict.decision === "ask") firstAsk ??= verdict.reason;
    else if (background && !verdict.byRule && unit.changesFiles !== null) unrecorded ??= `${quote(unit.text)}: ${unit.changesFiles}`;
  }
  if (mode === "full_access") return { decision: "allow", network };
  // Redirections are not covered by argument patterns (`bash(echo *)` does not allow `echo x > /etc/y`).
  if (firstAsk === null && !firstWholeTool(rules.allow)) {
    for (const redirection of analysis.redirections) {
      if (redirection.kind === "network" && networkAllowed && mode === "auto") continue;
      firstAsk = `${quote(redirection.command)}: ${redirection.reason}.`;
      break;
    }
    const overwrite = background ? analysis.overwrites[0] : undefined;
    if (overwrite) unrecorded ??= `${quote(overwrite.command)}: ${overwrite.reason}`;
  }
  if (firstAsk === null && unrecorded !== null) firstAsk = `${unrecorded}; ${unrecordedNote}`;
  return firstAsk === null ? { decision: "allow", network } : { decision: "ask", reason: firstAsk, network };
}

/**
 * Why a background command asks (S11, X7): it works on the workspace itself, while its
 * writes must be visible to later calls, so no layer records what it changes, as one does
 * for a foreground command (docs/architecture/shell-changes.md). Outside Full Access it therefore runs
 * unasked only when every sub-command is known to leave existing files as they are
 * (`file-keepers.ts`), or is allowed by a rule, and its redirections only append.
 */
const unrecordedNote =
  "a background command changes the workspace directly, where its changes are neither recorded nor revertable, so a person must approve it (run it in the foreground to have its changes recorded).";

function unitsSteps(rules: RuleSet, units: readonly ShellSubCommand[]): number {
  let characters = 0;
  for (const unit of units) characters += unit.text.length;
  return textSteps(rules.cost.text, { texts: units.length, characters });
}

function permanentDeleteOf(units: readonly ShellSubCommand[]): string | undefined {
  for (const unit of units) {
    const finding = unit.findings.find((candidate) => candidate.kind === "permanent_delete");
    if (finding) return `Refused ${quote(unit.text)}: ${finding.reason}.`;
  }
  return undefined;
}

function firstMatchingText(rules: readonly PolicyRule[], text: string): PolicyRule | undefined {
  for (const rule of rules) if (rule.argument === null || rule.argument.wildcard.test(text)) return rule;
  return undefined;
}

/** One sub-command's answer; `byRule`: an allow rule vouched for it. */
function judgeSubCommand(
  unit: ShellSubCommand,
  mode: JudgeInput["mode"],
  rules: RuleSet,
  networkAllowed: boolean,
): { decision: "ask"; reason: string } | { decision: "deny"; reason: string } | { decision: "allow"; byRule: boolean } {
  const denied = firstMatchingText(rules.deny, unit.text);
  if (denied) return { decision: "deny", reason: deniedBy(denied, ` for ${quote(unit.text)}`) };
  if (mode === "full_access") return { decision: "allow", byRule: false };
  for (const finding of unit.findings) {
    if (finding.kind === "permanent_delete") return { decision: "deny", reason: `Refused ${quote(unit.text)}: ${finding.reason}.` };
  }
  const asked = firstMatchingText(rules.ask, unit.text);
  if (asked) return { decision: "ask", reason: askedBy(asked, ` for ${quote(unit.text)}`) };
  if (firstMatchingText(rules.allow, unit.text)) return { decision: "allow", byRule: true };
  for (const finding of unit.findings) {
    if (finding.kind === "network" && networkAllowed && mode === "auto") continue;
    return { decision: "ask", reason: `${quote(unit.text)}: ${finding.reason}.` };
  }
  if (mode === "manual" && !unit.wrapper) return { decision: "ask", reason: `Manual mode asks before running ${quote(unit.text)}.` };
  return { decision: "allow", byRule: false };
}

/** Whether `candidate` is `root` or below it, as text (the gateway judges what a call names; the workspace door decides what it reaches). */
function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}
