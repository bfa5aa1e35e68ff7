import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { policyBudget } from "../../src/gateway/policy-cost.js";
import { script, waitFor } from "../helpers/api-client.js";
import { leastLongestStretch } from "../helpers/cpu-time.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { useTestEnv } from "../helpers/test-env.js";
import { longPaths, ruleShapes, worstAdmitted, type RuleShape } from "../gateway/worst-policies.js";
import { attempt, watch } from "./escape-ledger.js";

// A tenant's policies built to stall the processes that judge them (SPEC S9): the
// API that stores and judges them, the worker whose step and batch jobs judge every call. The
// worker is a process of its own, so that what this process's event loop does is the API's.
const { env, client } = useTestEnv();
let worker: FoyaProcess | undefined;
beforeAll(async () => {
  worker = await startFoyaProcess("worker", env.env);
});
afterAll(async () => {
  worker?.kill("SIGKILL");
  await worker?.exited;
});
const escapeClass = "policy-stall";
/** Nothing outside the workspace is at stake here: what is attacked is the processes' time. */
const nothingOutside = watch([]);

/** The rule: long and `**`-heavy, within today's per-rule caps (256 characters). */
const heavy = (index: number) => `write(${"**/*a*/".repeat(35)}x${index})`;
const budget = policyBudget.toLocaleString("en-US");

async function pendingApproval(runId: string): Promise<any> {
  return waitFor(
    async () => (await client.get(`/v1/approvals?status=pending&runId=${runId}`)).body.approvals[0],
    30_000,
    `an approval of run ${runId}`,
  );
}

describe("escape suite: policies that would stall a process", () => {
  it("S9: 1,000 distinct long **-heavy rules are refused when set, for the tenant or a project, saying the cost and the budget; nothing is stored", async () => {
    const rules = Array.from({ length: 1000 }, (_, index) => heavy(index));
    const { projectId } = await client.newSession();
    await attempt(
      "a policy of 1,000 long **-heavy rules",
      nothingOutside,
      async () => {
        for (const path of ["/v1/policy", `/v1/projects/${projectId}/policy`]) {
          const response = await client.request("PUT", path, { rules: { allow: rules } });
          expect(response.status, path).toBe(400);
          expect(response.body.error.code).toBe("bad_request");
          expect(response.body.error.message).toMatch(new RegExp(`cost [\\d,]+ steps to match .* over the budget of ${budget}`));
          expect(response.body.error.message).toContain("Costliest:");
        }
      },
      { escapeClass },
    );
    expect((await client.get("/v1/policy")).body).toEqual({});
    expect((await client.get(`/v1/projects/${projectId}/policy`)).body).toEqual({});
  });

  it("S9: 1,000 copies of one rule count once and are accepted", async () => {
    const rules = { deny: Array(1000).fill("write(**/secrets/**)") };
    const response = await client.request("PUT", "/v1/policy", { rules });
    expect(response.status).toBe(200);
    expect((await client.get("/v1/policy")).body).toEqual({ rules });
    await client.request("PUT", "/v1/policy", {});
  });

  it("S9: a tenant's and a project's policies are bounded together, whichever is set last", async () => {
    const { projectId } = await client.newSession();
    const half = (offset: number) => ({ rules: { ask: Array.from({ length: 60 }, (_, index) => `write(**/d${offset + index}/**)`) } });
    await attempt(
      "two policies each within the budget, over it together",
      nothingOutside,
      async () => {
        expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, half(0))).status).toBe(200);
        const tenant = await client.request("PUT", "/v1/policy", half(1000));
        expect(tenant.status).toBe(400);
        expect(tenant.body.error.message).toMatch(/with those of one of the tenant's projects cost/);
        expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, {})).status).toBe(200);
        expect((await client.request("PUT", "/v1/policy", half(1000))).status).toBe(200);
        const project = await client.request("PUT", `/v1/projects/${projectId}/policy`, half(0));
        expect(project.status).toBe(400);
        expect(project.body.error.message).toMatch(/with the tenant's cost/);
      },
      { escapeClass },
    );
    expect((await client.get(`/v1/projects/${projectId}/policy`)).body).toEqual({});
    await client.request("PUT", "/v1/policy", {});
  });

  it("S9: a policy stored over the budget before there was one is judged fail-closed in a real run: the write its rules allow asks, and a deny rule beside them denies", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    // Written the way an older release stored it: past the API's check.
    const allowing = { rules: { allow: Array.from({ length: 1000 }, (_, index) => `write(**/*a*/**/x${index}/**)`) } };
    await env.query("update tenants set policy = $1 where id = $2", [JSON.stringify(allowing), client.tenantId]);
    await attempt(
      "a stored policy over the budget, whose rules would allow the call",
      nothingOutside,
      async () => {
        const run = await client.startRun(
          sessionId,
          script([[{ tool: "write", args: { path: "a/x7/f.txt", content: "x" } }], [{ text: "done" }]]),
        );
        const approval = await pendingApproval(run.body.id);
        expect(approval.requestReason).toMatch(new RegExp(`over the budget of ${budget}.*A person must judge it`));
        await client.post(`/v1/approvals/${approval.id}`, { decision: "deny" });
        expect((await client.waitForRun(run.body.id)).status).toBe("completed");

        await env.query("update tenants set policy = $1 where id = $2", [
          JSON.stringify({ rules: { ...allowing.rules, deny: ["write(never/**)"] } }),
          client.tenantId,
        ]);
        const denied = await client.startRun(
          sessionId,
          script([[{ tool: "write", args: { path: "a/x7/f.txt", content: "x" } }], [{ text: "done" }]]),
        );
        expect((await client.waitForRun(denied.body.id)).status).toBe("completed");
        const [call] = await env.query<{ status: string; text: string }>(
          "select status, result->0->>'text' as text from tool_calls where run_id = $1",
          [denied.body.id],
        );
        expect(call).toMatchObject({ status: "denied", text: expect.stringContaining("deny rules cannot be checked") });
      },
      { escapeClass },
    );
    await env.query("update tenants set policy = '{}' where id = $1", [client.tenantId]);
  });

  it("S9: with the worst admitted policy, a run's step and batch jobs judge a 4 KiB path without losing their jobs, and the API judges an approval edited to a 4 KiB path holding its event loop at most 10 ms", async () => {
    const shape = ruleShapes.find((candidate) => candidate.name === "a literal between two **") as RuleShape;
    const [tenantPolicy, projectPolicy] = worstAdmitted(shape);
    // 2,048 names: the costliest 4 KiB path for these rules. Writing it would make 2,047 folders,
    // so it is only judged; the approved edits name a first folder too long to make instead (1,920 names).
    const deepPath = longPaths[0]?.path as string;
    const refusedPath = `${"x".repeat(257)}/${"a/".repeat(1918)}a`;
    expect([deepPath.length, refusedPath.length]).toEqual([4095, 4095]);
    const { sessionId, projectId } = await client.newSession({ approvalMode: "manual" });
    expect((await client.request("PUT", "/v1/policy", tenantPolicy)).status).toBe(200);
    expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, projectPolicy)).status).toBe(200);

    await attempt(
      "the worst admitted policy and 4 KiB paths",
      nothingOutside,
      async () => {
        // The worker: the step's pre-grant and the batch's gate judge every rule (none matches),
        // and Manual asks, for the mode's reason, not a fail-closed one. Six runs, one session
        // each (a session runs one turn at a time), for the API's decisions below.
        const approvals: string[] = [];
        for (let index = 0; index < 6; index++) {
          const session = index === 0 ? sessionId : (await client.post("/v1/sessions", { projectId, approvalMode: "manual" })).body.id;
          const run = await client.startRun(
            session,
            script([[{ tool: "write", args: { path: deepPath, content: "x" } }], [{ text: "done" }]]),
          );
          const approval = await pendingApproval(run.body.id);
          expect(approval.requestReason).toMatch(/^Manual mode asks before every write call/);
          approvals.push(approval.id);
        }
        // No job was taken for dead: judging never held the worker past its lease.
        expect(await env.query("select 1 from events where type = 'run_status' and data->>'status' = 'recovering'")).toEqual([]);

        // The API judges each edit before it stores the decision.
        const refused = await client.post(`/v1/approvals/${approvals[0]}`, {
          decision: "approve",
          arguments: { path: "x/d0/y", content: "x" },
        });
        expect(refused.status).toBe(400);
        expect(refused.body.error.message).toMatch(/denied by policy: Denied by the policy rule "write\(\*\*\/d0\/\*\*\)"/);
        const approve = async (id: string) => {
          const decided = await client.post(`/v1/approvals/${id}`, { decision: "approve", arguments: { path: refusedPath, content: "x" } });
          expect(decided.status).toBe(200);
        };
        // Two decisions warm this process up (its first judgments run before V8 optimizes the
        // matcher, like any code's); the least of the next three rounds is measured.
        for (const id of approvals.slice(0, 2)) await approve(id);
        const stretch = await leastLongestStretch(3, (round) => approve(approvals[round + 2] as string));
        expect(stretch.longestMs).toBeLessThanOrEqual(10);
        // The edits were recorded, and ran: the file system refuses the 257-character folder name.
        const decided = approvals.slice(0, 5);
        const calls = () =>
          env.query<{ status: string; edited: boolean }>(
            `select c.status, a.edited_arguments is not null as edited from approvals a join tool_calls c on c.id = a.tool_call_id where a.id = any($1)`,
            [decided],
          );
        await waitFor(async () => (await calls()).every((call) => call.status === "failed"), 30_000, "the approved calls to run");
        expect(await calls()).toEqual(Array(5).fill({ status: "failed", edited: true }));
        await client.post(`/v1/approvals/${approvals[5]}`, { decision: "deny" });
      },
      { escapeClass },
    );
    await client.request("PUT", "/v1/policy", {});
  });
});
