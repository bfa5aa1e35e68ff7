import { describe, expect, it } from "vitest";
import { judgeBatch } from "../../src/approvals/gate-batch.js";
import { loadConfig } from "../../src/config.js";
import type { ApprovalPolicy } from "../../src/core/policy.js";
import { preparePolicies } from "../../src/gateway/compiled-policy.js";
import { prepareRules } from "../../src/gateway/rules.js";
import type { CallRow } from "../../src/store/runs.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { createToolExecutor } from "../../src/tools/execute-tool-call.js";
import { createToolRegistry } from "../../src/tools/tool-registry.js";
import { preGrantFirstGroup } from "../../src/worker/step/pre-grant.js";
import { leastLongestStretch, longestStretch } from "../helpers/cpu-time.js";
import { longPaths, ruleShapes, worstAdmitted, type RuleShape } from "./worst-policies.js";

/**
 * What the worker's jobs do with a policy, watched from the event loop (SPEC S9: "no rule
 * can stall a process"; before the policy cost budget a step job took 21 s and a batch job
 * 43 s, and BullMQ lost their locks). Judging: the longest stretch of CPU between two turns of the loop stays
 * within the 10 ms bound of a judgment (`policy-cost.unit.test.ts`) (the least of three rounds, each on rules
 * of its own: `cpu-time.ts` says why). Compiling new rules: the loop gets a turn at least
 * every 16 rules (the CPU of those stretches is not asserted: compiling allocates, and a
 * young-generation collection under this machine's load is a pause of 5-15 ms of its own).
 * In a file of its own, so that its process has a small heap (a full collection of a large
 * one is a pause of its own, whatever the gateway does).
 */
const boundMs = 10;
const workspaceDir = "/srv/ws";
const executor = createToolExecutor(createToolRegistry(builtinTools({ webFetchAllowPrivate: false })));
const config = loadConfig({});

/** The shape's rules under numbers no earlier test used, so that compiling them is part of the work. */
function fresh(shape: RuleShape, offset: number): ApprovalPolicy[] {
  return worstAdmitted({ ...shape, rule: (index) => shape.rule(index + offset) });
}

/** As read by a claim: new objects, as JSON from Postgres would be. */
const asRead = (policies: readonly ApprovalPolicy[]): ApprovalPolicy[] => JSON.parse(JSON.stringify(policies));

const calls = longPaths.map((path, index) => ({
  callId: `call_${index}`,
  name: "write",
  argumentsRaw: JSON.stringify({ path: path.path, content: "x" }),
}));

describe("S9: the worker's jobs never stall on a policy", () => {
  // The executor compiles its argument validators on first use, whatever the policy.
  executor.parse(calls[0] as (typeof calls)[number]);

  const shapes = ["many short anchored rules", "a literal between two **", "a run of 30 ? between two **"].map(
    (name) => ruleShapes.find((shape) => shape.name === name) as RuleShape,
  );

  it.each(shapes.map((shape, index) => ({ shape, index })))(
    "S9: the step job's pre-grant and the batch job's gate hold the event loop at most 10 ms with the worst admitted policy ($shape.name)",
    async ({ shape, index }) => {
      // Rounds on rules of their own; the first three warm the code up (a cold process runs the
      // matcher unoptimized until V8 has seen it work), the last three are measured, their
      // policies compiled as an earlier claim would have.
      const rounds = [0, 1, 2, 3, 4, 5].map((round) => fresh(shape, 1_000_000 * (6 * index + round + 1)));
      for (const warm of rounds.slice(0, 3))
        await preGrantFirstGroup({ approvalMode: "auto", workspaceDir }, asRead(warm), executor, calls);
      for (const measured of rounds.slice(3)) await preparePolicies(measured);
      const step = await leastLongestStretch(3, (round) =>
        preGrantFirstGroup({ approvalMode: "auto", workspaceDir }, asRead(rounds[round + 3] as ApprovalPolicy[]), executor, calls),
      );
      expect(step.longestMs, "pre-grant").toBeLessThanOrEqual(boundMs);

      const rows = calls.map((call, callIndex) => ({ ...call, id: `row_${callIndex}`, status: "queued" }) as unknown as CallRow);
      const gate = await leastLongestStretch(3, (round) =>
        judgeBatch(
          { config, executor },
          {
            run: { id: "run_x", tenantId: "ten_x", sessionId: "ses_x", ordinal: 1 },
            approvalMode: "auto",
            projectId: "prj_x",
            workspaceDir,
            calls: rows,
            stepRef: { index: 0, attempt: 1 },
          },
          { policies: asRead(rounds[round + 3] as ApprovalPolicy[]), decided: new Map() },
        ),
      );
      expect(gate.longestMs, "batch gate").toBeLessThanOrEqual(boundMs);
      // Four calls judged one by one, with turns of the event loop between them.
      expect(gate.turns).toBeGreaterThanOrEqual(4);
    },
  );

  it("S9: compiling thousands of new rules, for the API's check or a claim, gives the event loop a turn at least every 16 rules", async () => {
    const compiling = await longestStretch(() =>
      prepareRules(Array.from({ length: 3000 }, (_, index) => `write({src,test}/**/x${index}-*.{ts,tsx}/**)`)),
    );
    expect(compiling.turns).toBeGreaterThanOrEqual(3000 / 16);
    const building = await longestStretch(() =>
      preparePolicies([{ rules: { allow: Array.from({ length: 1000 }, (_, index) => `bash(npm run task${index}*)`) } }]),
    );
    expect(building.turns).toBeGreaterThanOrEqual(1000 / 16);
  });
});
