import path from "node:path";
import type { ApprovalPolicy } from "../core/policy.js";
import type { ApprovalSubject } from "../core/tool-contract.js";
import { matchesPath, rulesForTool, type PolicyRule, type RulePath, type RuleSet } from "./rules.js";
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
 */
export function judgeCall(input: JudgeInput): Verdict {
  const rules = rulesForTool(input.policies, input.tool.name);
  const networkAllowed = policyAllowsNetwork(input.policies);
  return input.subject.kind === "command"
    ? judgeCommand(input, input.subject.command, rules, networkAllowed)
    : judgeSubject(input, input.subject, rules, networkAllowed);
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

/** Segments that need node:path to resolve: `.`, `..`, empty ones (`a//b`), a trailing slash. */
const needsResolve = /(?:^|\/)\.{1,2}(?:\/|$)|\/\/|\/$/;

function targetOf(subject: Exclude<ApprovalSubject, { kind: "command" }>, workspaceDir: string): Target {
  if (subject.kind === "url") return { kind: "url", url: subject.url };
  if (subject.kind === "none") return { kind: "none" };
  const requested = subject.path;
  // Lexical only: symbolic links leading out are the tool's own check (resolveWorkspacePath).
  if (requested !== "" && !needsResolve.test(requested) && !workspaceDir.endsWith("/")) {
    // The common shapes, without node:path: `src/a.ts`, `/ws/src/a.ts`, `/etc/x`.
    if (!requested.startsWith("/"))
      return { kind: "path", shown: requested, path: { relative: requested, absolute: `${workspaceDir}/${requested}` }, inside: true };
    if (requested === workspaceDir) return { kind: "path", shown: requested, path: { relative: ".", absolute: requested }, inside: true };
    if (requested.startsWith(`${workspaceDir}/`)) {
      return {
        kind: "path",
        shown: requested,
        path: { relative: requested.slice(workspaceDir.length + 1), absolute: requested },
        inside: true,
      };
    }
    return { kind: "path", shown: requested, path: { relative: null, absolute: requested }, inside: false };
  }
  const absolute = path.resolve(workspaceDir, requested);
  const inside = isInside(workspaceDir, absolute);
  const relative = inside ? path.relative(workspaceDir, absolute).split(path.sep).join("/") || "." : null;
  return { kind: "path", shown: requested, path: { relative, absolute }, inside };
}

function ruleMatchesTarget(rule: PolicyRule, target: Target): boolean {
  if (rule.argument === null) return true;
  if (target.kind === "path") return matchesPath(rule.argument, target.path);
  if (target.kind === "url") return rule.argument.wildcard.test(target.url);
  return false;
}

function firstMatching(rules: readonly PolicyRule[], target: Target): PolicyRule | undefined {
  for (const rule of rules) if (ruleMatchesTarget(rule, target)) return rule;
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
): Verdict {
  const { mode, tool } = input;
  const target = targetOf(subject, input.workspaceDir);
  const denied = firstMatching(rules.deny, target);
  if (denied) return { decision: "deny", reason: deniedBy(denied, targetShown(target)) };
  if (mode === "full_access") return { decision: "allow", network: true };
  const network = tool.sideEffect === "network" || target.kind === "url" || (tool.sideEffect === "exec" && networkAllowed);
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

function judgeCommand(input: JudgeInput, command: string, rules: RuleSet, networkAllowed: boolean): Verdict {
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
  let firstAsk: string | null = null;
  // A line that runs nothing (a comment) is judged as one command, so Manual still asks.
  const units: readonly ShellSubCommand[] =
    analysis.commands.length > 0 || analysis.redirections.length > 0
      ? analysis.commands
      : [{ text: command.trim(), program: "", wrapper: false, findings: [] }];
  for (const unit of units) {
    if (patternDeny && unit.findings.some((finding) => finding.kind === "unparsed")) {
      return {
        decision: "deny",
        reason: `${quote(unit.text)} could not be parsed, so the policy's deny rules cannot be checked; rewrite it.`,
      };
    }
    const verdict = judgeSubCommand(unit, mode, rules, networkAllowed);
    if (verdict === null) continue;
    if (verdict.decision === "deny") return { decision: "deny", reason: verdict.reason };
    firstAsk ??= verdict.reason;
  }
  if (mode === "full_access") return { decision: "allow", network };
  // Redirections are not covered by argument patterns (`bash(echo *)` does not allow `echo x > /etc/y`).
  if (firstAsk === null && !firstWholeTool(rules.allow)) {
    for (const redirection of analysis.redirections) {
      if (redirection.kind === "network" && networkAllowed && mode === "auto") continue;
      firstAsk = `${quote(redirection.command)}: ${redirection.reason}.`;
      break;
    }
  }
  return firstAsk === null ? { decision: "allow", network } : { decision: "ask", reason: firstAsk, network };
}

function firstMatchingText(rules: readonly PolicyRule[], text: string): PolicyRule | undefined {
  for (const rule of rules) if (rule.argument === null || rule.argument.wildcard.test(text)) return rule;
  return undefined;
}

/** One sub-command's answer; null allows. */
function judgeSubCommand(
  unit: ShellSubCommand,
  mode: JudgeInput["mode"],
  rules: RuleSet,
  networkAllowed: boolean,
): { decision: "ask" | "deny"; reason: string } | null {
  const denied = firstMatchingText(rules.deny, unit.text);
  if (denied) return { decision: "deny", reason: deniedBy(denied, ` for ${quote(unit.text)}`) };
  if (mode === "full_access") return null;
  for (const finding of unit.findings) {
    if (finding.kind === "permanent_delete") return { decision: "deny", reason: `Refused ${quote(unit.text)}: ${finding.reason}.` };
  }
  const asked = firstMatchingText(rules.ask, unit.text);
  if (asked) return { decision: "ask", reason: askedBy(asked, ` for ${quote(unit.text)}`) };
  if (firstMatchingText(rules.allow, unit.text)) return null;
  for (const finding of unit.findings) {
    if (finding.kind === "network" && networkAllowed && mode === "auto") continue;
    return { decision: "ask", reason: `${quote(unit.text)}: ${finding.reason}.` };
  }
  if (mode === "manual" && !unit.wrapper) return { decision: "ask", reason: `Manual mode asks before running ${quote(unit.text)}.` };
  return null;
}

/** Whether `candidate` is `root` or below it, as text (the gateway judges what a call names; the workspace door decides what it reaches). */
function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}
