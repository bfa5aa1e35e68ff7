import { describe, expect, it } from "vitest";
import { judge } from "../../src/approvals/gate-batch.js";
import type { ApprovalPolicy } from "../../src/core/policy.js";
import { judgeCall } from "../../src/gateway/judge-call.js";
import { policyBudget } from "../../src/gateway/policy-cost.js";
import { compilePolicy, policySetOverBudget } from "../../src/gateway/compiled-policy.js";
import type { JudgeInput, Verdict } from "../../src/gateway/verdict.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { createToolExecutor } from "../../src/tools/execute-tool-call.js";
import { createToolRegistry } from "../../src/tools/tool-registry.js";
import type { ApprovalSubject } from "../../src/tools/tool.js";
import type { ApprovalMode } from "../../src/core/session.js";
import { leastCpuMs } from "../helpers/cpu-time.js";
import { longCommand, longPaths, longUrl, ruleShapes, worstAdmitted, type RuleShape } from "./worst-policies.js";

/**
 * The bound of a judgment (SPEC S9, docs/decisions/0015-policy-cost-budget.md: the worst admitted
 * policy judges a 4 KiB path in ≤ 10 ms, in the worker and the API), asserted as CPU time, the least of five runs (`cpu-time.ts` says why):
 * wall time on the loaded 2-core machine these tests share includes waiting for a core. The
 * worst shape measured here takes about 3 ms under that load, so 10 ms is the requirement
 * with room, not a tuned figure.
 */
const boundMs = 10;

const workspaceDir = "/srv/ws";
const sideEffects = { write: "write", bash: "exec", web_fetch: "network" } as const;

function judgeOne(mode: ApprovalMode, tool: RuleShape["tool"], subject: ApprovalSubject, policies: readonly ApprovalPolicy[]): Verdict {
  const input: JudgeInput = { mode, tool: { name: tool, sideEffect: sideEffects[tool] }, subject, workspaceDir, policies };
  return judgeCall(input);
}

const pathShapes = ruleShapes.filter((shape) => shape.tool === "write");

describe("S9: what a policy costs to match is bounded", () => {
  it("S9: the worst admitted policy judges a 4 KiB path in at most 10 ms", () => {
    const measured: string[] = [];
    for (const shape of pathShapes) {
      const policies = worstAdmitted(shape);
      for (const { name, path, withinReference } of longPaths) {
        const verdict = judgeOne("auto", "write", { kind: "path", path }, policies);
        // No rule matches: a path within the reference subjects is judged in full, so Auto allows it.
        if (withinReference) expect(verdict, `${shape.name}, ${name}`).toEqual({ decision: "allow", network: false });
        const ms = leastCpuMs(() => judgeOne("auto", "write", { kind: "path", path }, policies));
        measured.push(`${shape.name}, ${name}: ${ms.toFixed(2)} ms`);
        expect(ms, `${shape.name}, ${name}`).toBeLessThanOrEqual(boundMs);
      }
    }
    expect(measured).toHaveLength(pathShapes.length * longPaths.length);
  });

  it("S9: the worst admitted policy judges a command line of 32 sub-commands and 4 KiB, or a 4 KiB URL, in at most 10 ms", () => {
    for (const shape of ruleShapes.filter((candidate) => candidate.tool !== "write")) {
      const policies = worstAdmitted(shape);
      const subject: ApprovalSubject = shape.tool === "bash" ? { kind: "command", command: longCommand } : { kind: "url", url: longUrl };
      // No rule matches: `echo` runs in Auto, a URL asks for the network.
      expect(judgeOne("auto", shape.tool, subject, policies).decision, shape.name).toBe(shape.tool === "bash" ? "allow" : "ask");
      expect(
        leastCpuMs(() => judgeOne("auto", shape.tool, subject, policies)),
        shape.name,
      ).toBeLessThanOrEqual(boundMs);
    }
  });
});

describe("S9: the policy budget", () => {
  /** The attack: a long `**`-heavy rule within the per-rule caps. */
  const heavy = (index: number) => `write(${"**/*a*/".repeat(35)}x${index})`;

  it("S9: identical rules count once: 1,000 copies of a rule cost what one does, and judge the same", () => {
    const rule = "write(**/secrets/**)";
    const one: ApprovalPolicy = { rules: { deny: [rule] } };
    const copies: ApprovalPolicy = { rules: { deny: Array(1000).fill(rule), ask: Array(1000).fill(rule), allow: Array(1000).fill(rule) } };
    expect(compilePolicy(copies).steps).toEqual(compilePolicy(one).steps);
    expect(compilePolicy(copies).deny).toHaveLength(1);
    expect([compilePolicy(copies).ask, compilePolicy(copies).allow]).toEqual([[], []]);
    expect(policySetOverBudget([copies, copies])).toBeNull();
    expect(judgeOne("auto", "write", { kind: "path", path: "a/secrets/key" }, [copies]).decision).toBe("deny");
    expect(judgeOne("auto", "write", { kind: "path", path: "a/public/key" }, [copies]).decision).toBe("allow");
  });

  it("S9: 1,000 distinct **-heavy rules, each within the per-rule caps, are over the budget, with the cost, the budget and the costliest rules said", () => {
    const rules = Array.from({ length: 1000 }, (_, index) => heavy(index));
    expect(rules[999]?.length).toBeLessThanOrEqual(6 + 256 + 1);
    const reason = policySetOverBudget([{ rules: { allow: rules } }, {}]);
    expect(reason).toMatch(/cost [\d,]+ steps to match against the longest argument they must judge/);
    expect(reason).toContain(`over the budget of ${policyBudget.toLocaleString("en-US")}`);
    expect(reason).toContain(`Costliest: "${heavy(100).slice(0, 80)}…"`);
    // Split between the tenant and the project, they are over the budget together.
    expect(policySetOverBudget([{ rules: { allow: rules.slice(0, 500) } }, { rules: { ask: rules.slice(500) } }])).not.toBeNull();
  });

  it("S9: a policy set stored over the budget is judged fail-closed at once: it asks, denies where deny rules apply, and no rule allows", () => {
    // Every one of these rules would allow the path; none may, since the set cannot be matched in bounded time.
    const allowing: ApprovalPolicy = { rules: { allow: Array.from({ length: 1000 }, (_, index) => `write(**/*a*/**/x${index}/**)`) } };
    const path = `${"a/".repeat(2000)}x7/y`;
    expect(policySetOverBudget([allowing])).not.toBeNull();
    const asked = judgeOne("manual", "write", { kind: "path", path }, [allowing]);
    expect(asked).toMatchObject({ decision: "ask", reason: expect.stringMatching(/over the budget of .* A person must judge it\./) });
    expect(judgeOne("full_access", "write", { kind: "path", path }, [allowing]).decision).toBe("allow");
    const withDeny: ApprovalPolicy[] = [{ rules: { deny: ["write(never/**)"] } }, allowing];
    for (const mode of ["manual", "auto", "full_access"] as const) {
      expect(judgeOne(mode, "write", { kind: "path", path }, withDeny), mode).toMatchObject({
        decision: "deny",
        reason: expect.stringContaining("deny rules cannot be checked"),
      });
    }
    // A tool the set has no rule for is judged by its mode alone.
    expect(judgeOne("auto", "bash", { kind: "command", command: "ls" }, [allowing]).decision).toBe("allow");
    expect(leastCpuMs(() => judgeOne("auto", "write", { kind: "path", path }, [allowing]))).toBeLessThanOrEqual(boundMs);
  });

  it("S9: an argument longer than its rules can afford is judged fail-closed; a permanent delete in it is still refused", () => {
    const policies: ApprovalPolicy[] = [
      { rules: { allow: Array.from({ length: 20 }, (_, index) => `write(*${"a*".repeat(60)}b${index})`) } },
    ];
    expect(policySetOverBudget(policies)).toBeNull();
    // A 255-character name is within the reference; a 200,000-character one is not.
    expect(judgeOne("auto", "write", { kind: "path", path: `${"a".repeat(254)}b0` }, policies)).toEqual({
      decision: "allow",
      network: false,
    });
    const long = `${"a".repeat(200_000)}b0`;
    expect(judgeOne("auto", "write", { kind: "path", path: long }, policies)).toMatchObject({
      decision: "ask",
      reason: expect.stringMatching(/^The path is too long to be checked against the policy's rules in bounded time/),
    });
    expect(leastCpuMs(() => judgeOne("auto", "write", { kind: "path", path: long }, policies))).toBeLessThanOrEqual(boundMs);

    const commandRules: ApprovalPolicy[] = [
      { rules: { allow: Array.from({ length: 300 }, (_, index) => `bash(echo xxxxxxxx${index}*)`) } },
    ];
    expect(policySetOverBudget(commandRules)).toBeNull();
    const many = Array.from({ length: 2000 }, (_, index) => `echo ${index}`).join("; ");
    expect(judgeOne("auto", "bash", { kind: "command", command: many }, commandRules)).toMatchObject({
      decision: "ask",
      reason: expect.stringContaining("The command line is too long to be checked"),
    });
    expect(judgeOne("auto", "bash", { kind: "command", command: `${many}; rm -rf src` }, commandRules)).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining("use the delete tool"),
    });
    // Without rules there is nothing to afford: the mode decides.
    expect(judgeOne("auto", "bash", { kind: "command", command: many }, []).decision).toBe("allow");
  });

  it("S9: the worker's and the API's judge gives the gateway's verdict", () => {
    const executor = createToolExecutor(createToolRegistry(builtinTools({ webFetchAllowPrivate: false })));
    const policies = worstAdmitted(pathShapes[2] as RuleShape);
    const parsed = executor.parse({ callId: "c", name: "write", argumentsRaw: JSON.stringify({ path: longPaths[0]?.path, content: "x" }) });
    expect(judge({ approvalMode: "auto", workspaceDir }, policies, parsed)).toEqual({ decision: "allow", network: false });
    expect(leastCpuMs(() => judge({ approvalMode: "auto", workspaceDir }, policies, parsed))).toBeLessThanOrEqual(boundMs);
  });
});
