import { describe, expect, it } from "vitest";
import type { ApprovalPolicy } from "../../src/core/policy.js";
import { judgeCall } from "../../src/gateway/judge-call.js";
import type { Verdict } from "../../src/gateway/verdict.js";
import { findPermanentDelete } from "../../src/tools/shell/permanent-delete.js";
import { destructiveForms } from "./destructive-forms.js";
import type { ApprovalMode } from "../../src/core/session.js";

function judgeBash(mode: ApprovalMode, command: string, policies: ApprovalPolicy[] = []): Verdict {
  return judgeCall({
    mode,
    tool: { name: "bash", sideEffect: "exec" },
    subject: { kind: "command", command },
    workspaceDir: "/work/ws",
    policies,
  });
}

const denied = destructiveForms.filter((form) => form.expected === "deny");
const rest = destructiveForms.filter((form) => form.expected !== "deny");

describe("S11: destructive shell forms in Auto", () => {
  it.each(destructiveForms)("S11: $expected $command ($why)", ({ command, expected }) => {
    expect(judgeBash("auto", command).decision).toBe(expected);
    // Manual asks for every command; a permanent delete is denied there too (F4).
    expect(judgeBash("manual", command).decision).toBe(expected === "deny" ? "deny" : "ask");
    expect(judgeBash("full_access", command)).toEqual({ decision: "allow", network: true });
  });

  it.each(denied)("S11: bash refuses $command itself, with the gateway's reason (F4)", ({ command }) => {
    const reason = findPermanentDelete(command);
    expect(reason).toContain("use the delete tool, which moves files to the trash");
    const verdict = judgeBash("auto", command);
    if (verdict.decision === "deny") expect(verdict.reason).toContain(reason);
  });

  it("S11: bash does not refuse what the gateway only asks about or allows", () => {
    for (const { command } of rest) expect(findPermanentDelete(command), command).toBeNull();
  });

  it("S11: lost work still asks when the policy allows the network", () => {
    const network: ApprovalPolicy = { network: true };
    expect(judgeBash("auto", "git push origin main", [network]).decision).toBe("allow");
    for (const command of [
      "git push --force origin main",
      "git push origin +main",
      "git push origin :old",
      "git push --forc origin main",
    ]) {
      expect(judgeBash("auto", command, [network]), command).toMatchObject({
        decision: "ask",
        reason: expect.stringContaining("no trash keeps"),
      });
    }
  });

  it("S11: an ask names the form and why", () => {
    expect(judgeBash("auto", "ls && git reset --hard")).toMatchObject({
      decision: "ask",
      reason: expect.stringContaining('"git reset --hard": git reset --hard discards'),
    });
    expect(judgeBash("auto", ": > notes.txt")).toMatchObject({ decision: "ask", reason: expect.stringContaining('empties "notes.txt"') });
    expect(judgeBash("auto", "bash s.sh")).toMatchObject({ decision: "ask", reason: expect.stringContaining('the script file "s.sh"') });
    expect(judgeBash("auto", "git -c alias.x=clean x -fdx")).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining('"git -c alias.x=clean clean -fdx"'),
    });
  });

  it("S11: a project rule can allow a script the gateway cannot read", () => {
    const rule: ApprovalPolicy = { rules: { allow: ["bash(./gradlew *)"] } };
    expect(judgeBash("auto", "./gradlew test", [rule]).decision).toBe("allow");
    expect(judgeBash("auto", "./gradlew test").decision).toBe("ask");
  });

  it("S11: forms built to be slow are judged quickly", () => {
    const cases: Array<[string, Verdict["decision"]]> = [
      [`git ${"-c alias.x=x ".repeat(5_000)}x`, "ask"], // an alias loop, each round as long as the line
      ["git -c alias.x='!git x' x", "ask"],
      [`tar ${"--remove-files ".repeat(10_000)}-cf x.tar src`, "deny"],
      [`alias ${"x='ls' ".repeat(5_000)}`, "allow"],
      [`watch ${"'ls;' ".repeat(5_000)}`, "allow"],
      [`git checkout ${"-b ".repeat(10_000)}`, "allow"],
      [`ls | xargs -${"0".repeat(100_000)} echo`, "allow"],
      [`tar -${"v".repeat(100_000)}cf x.tar src`, "allow"],
      [`git push ${"-f".repeat(50_000)}`, "ask"],
    ];
    // Bounded, not timed: a parser worse than linear would not finish these inside the test's time limit.
    for (const [command, expected] of cases) {
      expect(judgeBash("auto", command).decision, command.slice(0, 30)).toBe(expected);
    }
  });
});
