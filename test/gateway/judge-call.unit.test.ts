import { describe, expect, it } from "vitest";
import type { ApprovalPolicy } from "../../src/core/policy.js";
import { judgeCall } from "../../src/gateway/judge-call.js";
import { compilePolicy } from "../../src/gateway/compiled-policy.js";
import { parseRule, validatePolicyRules } from "../../src/gateway/rules.js";
import type { JudgeInput, Verdict } from "../../src/gateway/verdict.js";
import type { ApprovalSubject, SideEffect } from "../../src/tools/tool.js";
import type { ApprovalMode } from "../../src/core/session.js";

const workspaceDir = "/work/ws";

/** The built-in tools' side effects, plus a custom tool of each unjudgeable kind. */
const sideEffects: Record<string, SideEffect> = {
  read: "read",
  list: "read",
  write: "write",
  edit: "write",
  delete: "write",
  bash: "exec",
  web_fetch: "network",
  run_tests: "exec",
  crm_sync: "other",
  mcp__github__create_issue: "other",
};

function judge(mode: ApprovalMode, tool: string, subject: ApprovalSubject, policies: ApprovalPolicy[] = []): Verdict {
  const input: JudgeInput = { mode, tool: { name: tool, sideEffect: sideEffects[tool] ?? "other" }, subject, workspaceDir, policies };
  return judgeCall(input);
}

const file = (path: string): ApprovalSubject => ({ kind: "path", path });
const sh = (command: string): ApprovalSubject => ({ kind: "command", command });
const url = (value: string): ApprovalSubject => ({ kind: "url", url: value });
const none: ApprovalSubject = { kind: "none" };
const bash = (mode: ApprovalMode, command: string, policies: ApprovalPolicy[] = []) => judge(mode, "bash", sh(command), policies);

type Decision = Verdict["decision"];
/** [tool, subject, manual, auto, full_access] */
const table: Array<[string, ApprovalSubject, Decision, Decision, Decision]> = [
  ["read", file("src/a.ts"), "allow", "allow", "allow"],
  ["read", file("/work/ws/src/a.ts"), "allow", "allow", "allow"],
  ["read", file("/etc/passwd"), "ask", "ask", "allow"],
  ["read", file("../other/secret"), "ask", "ask", "allow"],
  ["list", file("."), "allow", "allow", "allow"],
  ["list", file("/"), "ask", "ask", "allow"],
  ["write", file("src/a.ts"), "ask", "allow", "allow"],
  ["write", file("/work/ws/src/a.ts"), "ask", "allow", "allow"],
  ["write", file("/tmp/x"), "ask", "ask", "allow"],
  ["write", file("src/../../x"), "ask", "ask", "allow"],
  ["edit", file("README.md"), "ask", "allow", "allow"],
  ["delete", file("build/out"), "ask", "allow", "allow"],
  ["delete", file("/work/ws-other/x"), "ask", "ask", "allow"],
  ["web_fetch", url("https://example.com/"), "ask", "ask", "allow"],
  ["crm_sync", none, "ask", "ask", "allow"],
  ["run_tests", none, "ask", "allow", "allow"],
  ["bash", sh("npm test"), "ask", "allow", "allow"],
  ["bash", sh("ls | grep x"), "ask", "allow", "allow"],
  ["bash", sh("git status && git diff"), "ask", "allow", "allow"],
  ["bash", sh("timeout 60 npm test"), "ask", "allow", "allow"],
  ["bash", sh("echo hi > out.txt 2>/dev/null"), "ask", "allow", "allow"],
  ["bash", sh("echo hi > /etc/x"), "ask", "ask", "allow"],
  ["bash", sh("echo hi >> ../x"), "ask", "ask", "allow"],
  ["bash", sh("cat /etc/passwd"), "ask", "ask", "allow"],
  ["bash", sh("cat ~/.ssh/id_rsa"), "ask", "ask", "allow"],
  ["bash", sh("cp x /tmp/y"), "ask", "ask", "allow"],
  ["bash", sh("cd / && ls"), "ask", "ask", "allow"],
  ["bash", sh("curl https://x"), "ask", "ask", "allow"],
  ["bash", sh("cat < /dev/tcp/127.0.0.1/80"), "ask", "ask", "allow"],
  ["bash", sh("exec 3<>/dev/udp/10.0.0.1/53"), "ask", "ask", "allow"],
  ["bash", sh("git push origin main"), "ask", "ask", "allow"],
  ["bash", sh("npm install left-pad"), "ask", "ask", "allow"],
  ["bash", sh("sudo ls"), "ask", "ask", "allow"],
  ["bash", sh("kill -9 1234"), "ask", "ask", "allow"],
  ["bash", sh("env FOO=1 curl x"), "ask", "ask", "allow"],
  ["bash", sh("nohup curl x &"), "ask", "ask", "allow"],
  ["bash", sh("ls | xargs curl"), "ask", "ask", "allow"],
  ["bash", sh("echo $(curl x)"), "ask", "ask", "allow"],
  ["bash", sh("echo `curl x`"), "ask", "ask", "allow"],
  ["bash", sh('echo "unterminated'), "ask", "ask", "allow"],
  ["bash", sh("echo 'rm x' | sh"), "ask", "ask", "allow"],
  ["bash", sh("$CMD --flag"), "ask", "ask", "allow"],
  ["bash", sh("rm -rf build"), "deny", "deny", "allow"],
];

describe("judgeCall: modes", () => {
  for (const [tool, subject, manual, auto, full] of table) {
    const shown =
      "command" in subject ? subject.command : "path" in subject ? subject.path : "url" in subject ? subject.url : "(no subject)";
    it(`S2: ${tool} ${JSON.stringify(shown)} -> manual ${manual}, auto ${auto}, full_access ${full}`, () => {
      expect(judge("manual", tool, subject).decision).toBe(manual);
      expect(judge("auto", tool, subject).decision).toBe(auto);
      expect(judge("full_access", tool, subject).decision).toBe(full);
    });
  }

  it("S2: an ask names the sub-command that needs approval", () => {
    expect(bash("auto", "npm test && curl https://x")).toMatchObject({
      decision: "ask",
      reason: expect.stringContaining('"curl https://x"'),
    });
    expect(bash("auto", "ls && echo hi > /etc/x")).toMatchObject({ decision: "ask", reason: expect.stringContaining("/etc/x") });
    expect(bash("auto", 'echo "unterminated')).toMatchObject({ decision: "ask", reason: expect.stringContaining("could not be parsed") });
  });

  it("S2: the network flag: needed by the command, given in Full Access, or by a policy with network: true", () => {
    expect(bash("auto", "npm test")).toEqual({ decision: "allow", network: false });
    expect(bash("auto", "curl https://x")).toMatchObject({ decision: "ask", network: true });
    expect(bash("full_access", "npm test")).toEqual({ decision: "allow", network: true });
    expect(bash("auto", "curl https://x", [{ network: true }])).toEqual({ decision: "allow", network: true });
    expect(bash("auto", "npm test", [{ network: true }])).toEqual({ decision: "allow", network: true });
    expect(judge("auto", "web_fetch", url("https://example.com/"), [{ network: true }])).toEqual({ decision: "allow", network: true });
    // Manual still asks; an explicit `network: false` (here the project's) wins over the tenant's true.
    expect(bash("manual", "curl https://x", [{ network: true }]).decision).toBe("ask");
    expect(bash("auto", "curl https://x", [{ network: true }, { network: false }]).decision).toBe("ask");
    // Policy network does not cover what is outside the workspace or dangerous.
    expect(bash("auto", "curl https://x > /etc/x", [{ network: true }]).decision).toBe("ask");
    expect(bash("auto", "sudo curl https://x", [{ network: true }]).decision).toBe("ask");
  });
});

describe("judgeCall: rules", () => {
  it("S2: deny beats ask beats allow", () => {
    const all = (rule: string): ApprovalPolicy => ({ rules: { deny: [rule], ask: [rule], allow: [rule] } });
    expect(bash("auto", "curl x", [all("bash(curl*)")]).decision).toBe("deny");
    expect(bash("auto", "curl x", [{ rules: { ask: ["bash(curl*)"], allow: ["bash(curl*)"] } }]).decision).toBe("ask");
    expect(bash("auto", "curl x", [{ rules: { allow: ["bash(curl*)"] } }])).toEqual({ decision: "allow", network: true });
    // Across sub-commands too: one denied sub-command denies the line, whatever the order.
    expect(bash("auto", "curl x; git push", [{ rules: { ask: ["bash(curl*)"], deny: ["bash(git push*)"] } }]).decision).toBe("deny");
  });

  it("S2: tenant and project rules are combined; the first matching rule is reported", () => {
    const tenant: ApprovalPolicy = { rules: { allow: ["bash(npm test*)"], deny: ["bash(curl *evil*)"] } };
    const project: ApprovalPolicy = { rules: { deny: ["bash(npm test --watch*)", "bash(curl*)"] } };
    expect(bash("manual", "npm test", [tenant, project]).decision).toBe("allow");
    expect(bash("manual", "npm test --watch", [tenant, project])).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining('"bash(npm test --watch*)"'),
    });
    expect(bash("auto", "curl https://evil.test", [tenant, project])).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining('"bash(curl *evil*)"'),
    });
    expect(bash("auto", "curl https://good.test", [tenant, project])).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining('"bash(curl*)"'),
    });
  });

  it("S2: bash(npm test*) allows npm test --watch in Manual, but the strictest sub-command still decides", () => {
    const policy: ApprovalPolicy = { rules: { allow: ["bash(npm test*)"] } };
    expect(bash("manual", "npm test --watch", [policy]).decision).toBe("allow");
    expect(bash("manual", "CI=1 timeout 600 npm test", [policy]).decision).toBe("allow"); // wrappers need no rule of their own
    expect(bash("manual", "npm test && curl x", [policy])).toMatchObject({ decision: "ask", reason: expect.stringContaining('"curl x"') });
    expect(bash("manual", "npm test | tail -5", [policy]).decision).toBe("ask");
    expect(bash("manual", "sudo npm test", [policy]).decision).toBe("ask");
  });

  it("S2: wrapped commands match rules too, so a deny cannot be dodged by wrapping", () => {
    const policy: ApprovalPolicy = { rules: { deny: ["bash(curl*)"] } };
    for (const command of [
      "sudo curl x",
      "env -i curl x",
      "FOO=1 curl x",
      "sh -c 'curl x'",
      "echo $(curl x)",
      "xargs curl",
      "timeout 5 curl x",
    ]) {
      expect(bash("full_access", command, [policy]).decision, command).toBe("deny");
    }
  });

  it("S2: path rules: write(src/**) allows, write(secrets/**) denies", () => {
    const policy: ApprovalPolicy = { rules: { allow: ["write(src/**)"], deny: ["write(secrets/**)", "edit(**/*.pem)"] } };
    expect(judge("manual", "write", file("src/a/b.ts"), [policy]).decision).toBe("allow");
    expect(judge("manual", "write", file("/work/ws/src/b.ts"), [policy]).decision).toBe("allow");
    expect(judge("manual", "write", file("docs/x.md"), [policy]).decision).toBe("ask");
    expect(judge("auto", "write", file("docs/x.md"), [policy]).decision).toBe("allow");
    expect(judge("auto", "write", file("secrets/key"), [policy])).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining("write(secrets/**)"),
    });
    expect(judge("auto", "write", file("./secrets/.env"), [policy]).decision).toBe("deny"); // dot files match
    expect(judge("auto", "edit", file("a/b/c.pem"), [policy]).decision).toBe("deny");
    expect(judge("auto", "edit", file("c.pem"), [policy]).decision).toBe("deny"); // `**/` spans zero folders
    expect(judge("auto", "write", file("src/../secrets/k"), [policy]).decision).toBe("deny"); // normalized first
  });

  it("S2: absolute path rules and URL rules", () => {
    expect(judge("auto", "read", file("/etc/hosts"), [{ rules: { allow: ["read(/etc/hosts)"] } }]).decision).toBe("allow");
    expect(judge("auto", "read", file("/etc/passwd"), [{ rules: { allow: ["read(/etc/hosts)"] } }]).decision).toBe("ask");
    const docs: ApprovalPolicy = { rules: { allow: ["web_fetch(https://docs.example.com/*)"] } };
    expect(judge("auto", "web_fetch", url("https://docs.example.com/a/b?c=1"), [docs])).toEqual({ decision: "allow", network: true });
    expect(judge("auto", "web_fetch", url("https://example.com/"), [docs]).decision).toBe("ask");
    expect(judge("auto", "mcp__github__create_issue", none, [{ rules: { deny: ["mcp__github__*"] } }]).decision).toBe("deny");
    expect(judge("auto", "crm_sync", none, [{ rules: { allow: ["crm_*"] } }]).decision).toBe("allow");
    expect(judge("auto", "crm_sync", none, [{ rules: { allow: ["crm_sync(x*)"] } }]).decision).toBe("ask"); // no subject: patterns never match
  });

  it("S2: a deny rule applies in Full Access; an ask rule is ignored there", () => {
    expect(bash("full_access", "curl x", [{ rules: { deny: ["bash(curl*)"] } }]).decision).toBe("deny");
    expect(judge("full_access", "read", file("/etc/shadow"), [{ rules: { deny: ["read(/etc/**)"] } }]).decision).toBe("deny");
    expect(bash("full_access", "curl x", [{ rules: { ask: ["bash"] } }])).toEqual({ decision: "allow", network: true });
    expect(judge("full_access", "write", file("/tmp/x"), [{ rules: { ask: ["write"] } }]).decision).toBe("allow");
  });

  it("S2: an allow rule does not lift the refusal of permanent deletes, nor cover redirections it does not name", () => {
    expect(bash("manual", "rm x", [{ rules: { allow: ["bash"] } }]).decision).toBe("deny");
    expect(bash("manual", "curl x > /etc/y", [{ rules: { allow: ["bash"] } }]).decision).toBe("allow"); // the whole tool is allowed
    const echo: ApprovalPolicy = { rules: { allow: ["bash(echo *)"] } };
    expect(bash("manual", "echo hi > out.txt", [echo]).decision).toBe("allow");
    expect(bash("manual", "echo hi > /etc/x", [echo]).decision).toBe("ask");
  });

  it("S2: a line that cannot be parsed asks, or is denied where deny rules could not be checked", () => {
    for (const command of ['echo "unterminated', "echo 'x", "echo (x", "echo `ls", "echo $(ls", "ls )", "cat <", "sh -c 'echo \"x'"]) {
      expect(bash("auto", command).decision, command).toBe("ask");
      expect(bash("full_access", command).decision, command).toBe("allow");
    }
    const deny: ApprovalPolicy = { rules: { deny: ["bash(curl*)"] } };
    expect(bash("full_access", 'curl https://x; echo "oops', [deny])).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining("could not be parsed"),
    });
    expect(bash("full_access", "sh -c 'curl \"x'", [deny]).decision).toBe("deny");
    expect(bash("full_access", "ls", [deny]).decision).toBe("allow");
  });

  it("S2: pathological command lines are judged quickly and never throw", () => {
    const cases: Array<[string, Decision]> = [
      [`${"nohup ".repeat(15_000)}rm x`, "ask"], // too many wrappers to check: not silently allowed
      ['"${a:-'.repeat(15_000), "ask"], // nesting beyond the stack
      ["$(".repeat(15_000), "ask"],
      [`${"FOO=1 ".repeat(15_000)}ls`, "allow"],
      ["echo $(ls) ".repeat(8_000), "allow"],
      [`${"ls | ".repeat(20_000)}ls`, "allow"],
      ["a".repeat(100_000), "allow"],
    ];
    // Bounded, not timed: a parser worse than linear would not finish these inside the test's time limit.
    for (const [command, expected] of cases) {
      expect(bash("auto", command).decision, command.slice(0, 20)).toBe(expected);
    }
  });

  it("S1: a visible tool can still be denied by the gateway", () => {
    const policy: ApprovalPolicy = { rules: { deny: ["read"] } };
    for (const mode of ["manual", "auto", "full_access"] as const) {
      expect(judge(mode, "read", file("src/a.ts"), [policy])).toMatchObject({
        decision: "deny",
        reason: expect.stringContaining('"read"'),
      });
      expect(judge(mode, "list", file("src"), [policy]).decision).toBe("allow"); // another tool is untouched
    }
  });

  it("S2: parseRule rejects invalid rules with a clear error and accepts the documented forms", () => {
    for (const bad of ["", "   ", "bash(", "bash()", "bash( )", "ba sh", "(npm test)", "bash(x)y", "bash)", "read[x]", "web fetch(x)"]) {
      const parsed = parseRule(bad);
      expect(parsed.ok, bad).toBe(false);
      if (!parsed.ok) expect(parsed.error.length, bad).toBeGreaterThan(10);
    }
    for (const good of [
      "bash",
      "bash(npm test*)",
      "write(src/**)",
      "web_fetch",
      "mcp__github__*",
      "read(/etc/**)",
      "web_fetch(https://*.example.com/*)",
      "*",
    ]) {
      expect(parseRule(good).ok, good).toBe(true);
    }
    expect(validatePolicyRules({ allow: ["bash(npm test*)", "bash("], deny: ["ok", ""] })).toEqual([
      expect.stringMatching(/^deny\[1\]: /),
      expect.stringMatching(/^allow\[1\]: /),
    ]);
    expect(validatePolicyRules(undefined)).toEqual([]);
  });

  it("S2: rules are compiled once per policy object", () => {
    const policy: ApprovalPolicy = { rules: { allow: ["bash(npm test*)"] } };
    expect(compilePolicy(policy)).toBe(compilePolicy(policy));
    const replaced = { ...policy, rules: { allow: ["bash(ls*)"] } };
    expect(compilePolicy(replaced).allow[0]?.source).toBe("bash(ls*)");
  });
});
