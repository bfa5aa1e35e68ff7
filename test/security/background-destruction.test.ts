import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { script, waitFor } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { backgroundForms, backgroundSetup } from "../gateway/background-forms.js";
import { attempt, watch } from "./escape-ledger.js";

// Destructive forms run as background commands (SPEC S11, X7, B1): a background command works on
// the workspace itself, where no layer records what it changes, so in Auto each form must be
// refused or asked, and the workspace must be exactly as it was. Real runs, a real worker, the sandbox.
const { env, client } = useTestEnv({ worker: true });
const escapeClass = "background-destruction";

async function callsOf(runId: string) {
  return env.query<{ status: string; error_code: string | null; text: string | null }>(
    "select status, error_code, result->0->>'text' as text from tool_calls where run_id = $1 order by call_index",
    [runId],
  );
}

/** Runs one batch of calls and answers the run's id once it has ended or waits for a decision. */
async function runBatch(sessionId: string, calls: object[]): Promise<string> {
  const run = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
  const runId = run.body.id as string;
  await waitFor(
    async () => ["completed", "failed", "cancelled", "awaiting_approval"].includes((await client.get(`/v1/runs/${runId}`)).body.status),
    30_000,
    `run ${runId} to end or wait`,
  );
  return runId;
}

describe("escape suite: destructive forms as background commands", () => {
  it.each(backgroundForms)(
    "S11, X7, B1: in Auto, the background command $command is $expected and destroys nothing",
    async ({ command, expected }) => {
      const { sessionId } = await client.newSession({ approvalMode: "auto" });
      const workspace = await env.workspaceOf(sessionId);
      const prepared = await runBatch(sessionId, [{ tool: "bash", args: { command: backgroundSetup } }]);
      expect(await callsOf(prepared)).toEqual([expect.objectContaining({ status: "succeeded" })]);

      await attempt(
        `background: ${command}`,
        watch([workspace]),
        async () => {
          const runId = await runBatch(sessionId, [{ tool: "bash", args: { command, background: true } }]);
          if (expected === "deny") {
            expect((await client.waitForRun(runId)).status).toBe("completed");
            expect(await callsOf(runId)).toEqual([expect.objectContaining({ status: "denied", text: expect.stringContaining("Refused") })]);
            return;
          }
          const [approval] = (await client.get(`/v1/approvals?status=pending&runId=${runId}`)).body.approvals;
          expect(approval, "asked").toBeDefined();
          // The approver is told why: what would go unrecorded, or what the form loses.
          expect(approval.requestReason.length).toBeGreaterThan(20);
          expect((await client.post(`/v1/approvals/${approval.id}`, { decision: "deny", reason: "not in the background" })).status).toBe(
            200,
          );
          expect((await client.waitForRun(runId)).status).toBe("completed");
          expect(await callsOf(runId)).toEqual([expect.objectContaining({ status: "denied" })]);
          // Nothing was started that could still run.
          expect(await env.query("select id from commands where session_id = $1", [sessionId])).toEqual([]);
        },
        { escapeClass },
      );
      expect(await readFile(path.join(workspace, "precious.txt"), "utf8")).toBe("precious\n");
    },
  );

  it("S11, B1: a background command that changes no existing file starts without a question, and runs", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const runId = await runBatch(sessionId, [
      { tool: "bash", args: { command: "for i in 1 2 3; do echo tick $i >> ticks.log; sleep 0.2; done", background: true } },
    ]);
    expect((await client.waitForRun(runId)).status).toBe("completed");
    const [call] = await callsOf(runId);
    expect(call).toMatchObject({ status: "succeeded", text: expect.stringMatching(/^Started background command cmd_/) });
    expect(await env.query("select id from approvals where run_id = $1", [runId])).toEqual([]);
    await waitFor(
      async () => (await readFile(path.join(workspace, "ticks.log"), "utf8").catch(() => "")) === "tick 1\ntick 2\ntick 3\n",
      30_000,
      "the ticks",
    );
  });
});
