import { describe, expect, it } from "vitest";
import type { ApprovalPolicy } from "../../src/core/policy.js";
import type { ApprovalMode } from "../../src/core/session.js";
import { judgeCall } from "../../src/gateway/judge-call.js";
import type { Verdict } from "../../src/gateway/verdict.js";
import { backgroundForms, cleanBackgroundCommands } from "./background-forms.js";
import { destructiveForms } from "./destructive-forms.js";

function judgeBash(mode: ApprovalMode, command: string, background: boolean, policies: ApprovalPolicy[] = []): Verdict {
  return judgeCall({
    mode,
    tool: { name: "bash", sideEffect: "exec" },
    subject: { kind: "command", command, background },
    workspaceDir: "/work/ws",
    policies,
  });
}

describe("S11, X7, B1: background commands, whose changes nothing records", () => {
  it.each(backgroundForms)("S11, X7, B1: in the background, $command is $expected in Auto ($why)", ({ command, expected, since }) => {
    const verdict = judgeBash("auto", command, true);
    expect(verdict.decision).toBe(expected);
    if (since) {
      expect(verdict).toMatchObject({ reason: expect.stringContaining("a background command changes the workspace directly") });
      // In the foreground the command runs on a layer whose changes are recorded and revertable (X7).
      expect(judgeBash("auto", command, false).decision).toBe("allow");
    }
    expect(judgeBash("manual", command, true).decision).toBe(expected);
    // Full Access asks nothing (S2), a background command included.
    expect(judgeBash("full_access", command, true)).toEqual({ decision: "allow", network: true });
  });

  it("S11, B1: every form of the destructive-forms corpus is refused or asked in the background as in the foreground, and what is allowed there asks unless it keeps every file", () => {
    const relaxed: string[] = [];
    for (const { command, expected } of destructiveForms) {
      const verdict = judgeBash("auto", command, true).decision;
      if (expected === "allow" ? verdict === "deny" : verdict !== expected)
        relaxed.push(`${command}: ${verdict}, ${expected} in the foreground`);
    }
    expect(relaxed).toEqual([]);
    // Writes the foreground records (`echo hi > out.txt`, `sed -i`) ask in the background.
    const asked = destructiveForms.filter(
      ({ command, expected }) => expected === "allow" && judgeBash("auto", command, true).decision === "ask",
    );
    expect(asked.map((form) => form.command)).toEqual(expect.arrayContaining(["echo hi > out.txt", "git checkout main"]));
  });

  it.each(cleanBackgroundCommands)("S11, B1: %s changes no existing file and runs in the background without asking", (command) => {
    expect(judgeBash("auto", command, true)).toEqual({ decision: "allow", network: false });
  });

  it("S11, B1: what the analysis cannot see into asks in the background: programs, scripts, interpreters, build tools", () => {
    for (const command of ["npm run dev", "make watch", "python3 -m http.server 8000", "cargo watch -x run"]) {
      expect(judgeBash("auto", command, false).decision, command).toBe("allow");
      expect(judgeBash("auto", command, true).decision, command).toBe("ask");
    }
    for (const command of ["./server", "$SERVER --port 3000", "bash serve.sh", 'echo "unterminated']) {
      expect(judgeBash("auto", command, true).decision, command).toBe("ask");
    }
  });

  it("S11, B1: a project rule vouches for a background command it allows, but not for a redirection that overwrites", () => {
    const rules: ApprovalPolicy[] = [{ rules: { allow: ["bash(npm run dev*)"] } }];
    expect(judgeBash("auto", "npm run dev", true, rules).decision).toBe("allow");
    expect(judgeBash("auto", "npm run dev >> dev.log 2>&1", true, rules).decision).toBe("allow");
    expect(judgeBash("auto", "npm run dev > dev.log", true, rules)).toMatchObject({
      decision: "ask",
      reason: expect.stringContaining('the redirection "> dev.log" replaces its content'),
    });
    expect(judgeBash("auto", "npm run dev && mv a b", true, rules)).toMatchObject({
      decision: "ask",
      reason: expect.stringContaining('"mv a b"'),
    });
  });
});
