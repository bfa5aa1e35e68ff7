import path from "node:path";
import type { ApprovalPolicy } from "../core/policy.js";
import type { ApprovalSubject } from "../tools/tool.js";
import { isInside } from "../tools/workspace-path.js";
import { compilePolicy, matchesPath, type PolicyRule, type RulePath } from "./rules.js";
import { analyzeShell, type ShellFinding, type ShellSubCommand } from "./shell-analysis.js";
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
 *    allows it), nor anything dangerous.
 *
 * A shell command is judged per sub-command (`npm test && curl x` is two), and
 * its redirections on their own; the strictest answer wins (deny > ask > allow),
 * and the first sub-command with it gives the reason. Rules apply in policy
 * order (tenant, then project); within a class the first match is reported.
 */
export function judgeCall(input: JudgeInput): Verdict {
  const rules = applicableRules(input.policies, input.tool.name);
  const networkAllowed = policyAllowsNetwork(input.policies);
  return input.subject.kind === "command"
    ? judgeCommand(input, input.subject.command, rules, networkAllowed)
    : judgeSubject(input, input.subject, rules, networkAllowed);
}

interface ApplicableRules {
  deny: PolicyRule[];
  ask: PolicyRule[];
  allow: PolicyRule[];
}

/** The rules of every policy whose tool part matches this tool, in policy order. */
function applicableRules(policies: readonly ApprovalPolicy[], toolName: string): ApplicableRules {
  const rules: ApplicableRules = { deny: [], ask: [], allow: [] };
  for (const policy of policies) {
    const compiled = compilePolicy(policy);
    for (const kind of ["deny", "ask", "allow"] as const) {
      for (const rule of compiled[kind]) if (rule.tool.test(toolName)) rules[kind].push(rule);
    }
  }
  return rules;
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

function byRule(kind: "deny" | "ask", rule: PolicyRule, what: string): string {
  return kind === "deny" ? `Denied by the policy rule "${rule.source}"${what}.` : `The policy rule "${rule.source}" asks for approval${what}.`;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

// ---------------------------------------------------------------- paths, URLs, no subject

type Target = { kind: "path"; shown: string; path: RulePath; inside: boolean } | { kind: "url"; url: string } | { kind: "none" };

function targetOf(subject: Exclude<ApprovalSubject, { kind: "command" }>, workspaceDir: string): Target {
  if (subject.kind === "url") return { kind: "url", url: subject.url };
  if (subject.kind === "none") return { kind: "none" };
  // Lexical only: symbolic links leading out are the tool's own check (resolveWorkspacePath).
  const absolute = path.resolve(workspaceDir, subject.path);
  const inside = isInside(workspaceDir, absolute);
  const relative = inside ? path.relative(workspaceDir, absolute).split(path.sep).join("/") || "." : null;
  return { kind: "path", shown: subject.path, path: { relative, absolute }, inside };
}

function ruleMatchesTarget(rule: PolicyRule, target: Target): boolean {
  if (rule.argument === null) return true;
  if (target.kind === "path") return matchesPath(rule.argument, target.path);
  if (target.kind === "url") return rule.argument.wildcard.test(target.url);
  return false;
}

function judgeSubject(input: JudgeInput, subject: Exclude<ApprovalSubject, { kind: "command" }>, rules: ApplicableRules, networkAllowed: boolean): Verdict {
  const { mode, tool } = input;
  const target = targetOf(subject, input.workspaceDir);
  const on = target.kind === "path" ? ` on ${quote(target.shown)}` : target.kind === "url" ? ` on ${quote(target.url)}` : "";
  const denied = rules.deny.find((rule) => ruleMatchesTarget(rule, target));
  if (denied) return { decision: "deny", reason: byRule("deny", denied, on) };
  if (mode === "full_access") return { decision: "allow", network: true };
  const network = tool.sideEffect === "network" || target.kind === "url" || (tool.sideEffect === "exec" && networkAllowed);
  const asked = rules.ask.find((rule) => ruleMatchesTarget(rule, target));
  if (asked) return { decision: "ask", reason: byRule("ask", asked, on), network };
  if (rules.allow.some((rule) => ruleMatchesTarget(rule, target))) return { decision: "allow", network };

  const outside = target.kind === "path" && !target.inside;
  const ask = (reason: string): Verdict => ({ decision: "ask", reason, network });
  if (tool.sideEffect === "read") return outside ? ask(`${tool.name} reads ${quote(target.shown)}, outside the workspace.`) : { decision: "allow", network };
  if (mode === "manual") return ask(`Manual mode asks before every ${tool.name} call${on}.`);
  switch (tool.sideEffect) {
    case "write":
      if (target.kind === "path") return outside ? ask(`${tool.name} writes ${quote(target.shown)}, outside the workspace.`) : { decision: "allow", network };
      return ask(`Auto mode cannot tell where ${tool.name} writes.`);
    case "network":
      return networkAllowed ? { decision: "allow", network } : ask(`${tool.name} reaches the network${target.kind === "url" ? ` (${quote(target.url)})` : ""}.`);
    case "exec":
      return { decision: "allow", network };
    case "other":
      return ask(`Auto mode asks before ${tool.name}, whose effects it cannot judge.`);
  }
}

// ---------------------------------------------------------------- shell commands

function judgeCommand(input: JudgeInput, command: string, rules: ApplicableRules, networkAllowed: boolean): Verdict {
  const { mode } = input;
  // Rules without an argument pattern cover the whole call, redirections included.
  const wholeDeny = rules.deny.find((rule) => rule.argument === null);
  if (wholeDeny) return { decision: "deny", reason: byRule("deny", wholeDeny, "") };
  const analysis = analyzeShell(command, input.workspaceDir);
  if (!analysis.parsed) {
    if (mode === "full_access") return { decision: "allow", network: true };
    const wholeAsk = rules.ask.find((rule) => rule.argument === null);
    if (wholeAsk) return { decision: "ask", reason: byRule("ask", wholeAsk, ""), network: networkAllowed };
    if (rules.allow.some((rule) => rule.argument === null)) return { decision: "allow", network: networkAllowed };
    return { decision: "ask", reason: `The command could not be parsed (${analysis.error}), so it cannot be judged.`, network: networkAllowed };
  }
  const network = mode === "full_access" || analysis.network || networkAllowed;
  let firstAsk: string | null = null;
  // A line that runs nothing (a comment) is judged as one command, so Manual still asks.
  const units: readonly ShellSubCommand[] =
    analysis.commands.length > 0 || analysis.redirections.length > 0 ? analysis.commands : [{ text: command.trim(), program: "", wrapper: false, findings: [] }];
  for (const unit of units) {
    const verdict = judgeSubCommand(unit, mode, rules, networkAllowed);
    if (verdict.decision === "deny") return verdict;
    if (verdict.decision === "ask" && firstAsk === null) firstAsk = verdict.reason;
  }
  if (mode === "full_access") return { decision: "allow", network };
  // Redirections are not covered by argument patterns (`bash(echo *)` does not allow `echo x > /etc/y`).
  const wholeAllow = rules.allow.some((rule) => rule.argument === null);
  for (const redirection of analysis.redirections) {
    if (firstAsk !== null || wholeAllow) break;
    if (!(redirection.kind === "network" && networkAllowed && mode === "auto")) firstAsk = `${quote(redirection.command)}: ${redirection.reason}.`;
  }
  return firstAsk === null ? { decision: "allow", network } : { decision: "ask", reason: firstAsk, network };
}

type UnitVerdict = { decision: "allow" } | { decision: "ask"; reason: string } | { decision: "deny"; reason: string };

function judgeSubCommand(unit: ShellSubCommand, mode: JudgeInput["mode"], rules: ApplicableRules, networkAllowed: boolean): UnitVerdict {
  const matches = (rule: PolicyRule) => rule.argument === null || rule.argument.wildcard.test(unit.text);
  const on = ` for ${quote(unit.text)}`;
  const denied = rules.deny.find(matches);
  if (denied) return { decision: "deny", reason: byRule("deny", denied, on) };
  if (mode === "full_access") return { decision: "allow" };
  const deletes = unit.findings.find((finding) => finding.kind === "permanent_delete");
  if (deletes) return { decision: "deny", reason: `Refused ${quote(unit.text)}: ${deletes.reason}.` };
  const asked = rules.ask.find(matches);
  if (asked) return { decision: "ask", reason: byRule("ask", asked, on) };
  if (rules.allow.some(matches)) return { decision: "allow" };
  const finding = unit.findings.find((candidate: ShellFinding) => !(candidate.kind === "network" && networkAllowed && mode === "auto"));
  if (finding) return { decision: "ask", reason: `${quote(unit.text)}: ${finding.reason}.` };
  if (mode === "manual" && !unit.wrapper) return { decision: "ask", reason: `Manual mode asks before running ${quote(unit.text)}.` };
  return { decision: "allow" };
}
