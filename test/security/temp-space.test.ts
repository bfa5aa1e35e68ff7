import { readFileSync, statfsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { killAll, livingWith, uniqueMarker } from "../sandbox/host-processes.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// A sandbox's /tmp, /var/tmp and /dev/shm are tmpfs: host memory no rlimit counts (SPEC S7). Each sandbox
// gets a share of its tenant's temporary-space budget on the host, background commands a small one, and together they
// never hold more than the budget, on the real worker.
const { env, client } = useTestEnv({ worker: true });
const mib = 1024 ** 2;
const limits = { tmpBytes: 48 * mib, backgroundTmpBytes: 24 * mib, tmpBudgetBytes: 64 * mib };
const markers = new Set<string>();
let filler: ApiClient;
let other: string;
let canary: Canary;

beforeAll(async () => {
  filler = await env.newTenant("filler");
  expect((await env.admin.patch(`/v1/tenants/${filler.tenantId}`, { limits })).status).toBe(200);
  // What the filling must not touch: another tenant's workspace.
  const session = await client.newSession({ approvalMode: "auto" });
  expect((await client.request("PUT", `/v1/projects/${session.projectId}/policy`, { rules: { allow: ["bash"] } })).status).toBe(200);
  other = session.sessionId;
  canary = watch([await env.workspaceOf(other)]);
});
afterAll(async () => killAll(markers));

const resultsOf = (runId: string) =>
  env.query<{ status: string; error_code: string | null; text: string }>(
    "select status, error_code, result->0->>'text' as text from tool_calls where run_id = $1 order by call_index",
    [runId],
  );

/** Runs one model step of bash calls for the filler tenant; answers their results in order. */
async function bashCalls(sessionId: string, calls: Array<{ command: string; background?: boolean }>) {
  const run = await filler.startRun(sessionId, script([calls.map((args) => ({ tool: "bash", args })), [{ text: "done" }]]));
  expect((await filler.waitForRun(run.body.id, 60_000)).status).toBe("completed");
  return resultsOf(run.body.id);
}

/** What a sandbox's df says of its three temporary folders: size and used bytes of each. */
const usage = "df -B1 --output=size,used /tmp /var/tmp /dev/shm | tail -n +2 | tr -s ' ' | paste -sd ' '";
const sizesIn = (output: string) => {
  const numbers = /(\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(output.replace(/\s+/g, " "));
  if (!numbers) return undefined;
  const [tmp, tmpUsed, varTmp, varTmpUsed, shm, shmUsed] = numbers.slice(1).map(Number) as [number, number, number, number, number, number];
  return { size: tmp + varTmp + shm, used: tmpUsed + varTmpUsed + shmUsed, tmp };
};

describe("escape suite: temporary space", () => {
  it("S7: a tenant's sandboxes hold at most its temporary-space budget on a host: background commands get the small share, the last ones less, then none; the space comes back when they end", async () => {
    const { sessionId, projectId } = await filler.newSession({ approvalMode: "auto" });
    // The gateway would ask about writes to /tmp; a rule lets them run, so the budget is what is tested (S1).
    expect((await filler.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["bash"] } })).status).toBe(200);
    const marker = uniqueMarker();
    markers.add(marker);
    // Each fills every byte it can of its three folders, reports, and stays.
    const fill = `for d in /tmp /var/tmp /dev/shm; do dd if=/dev/zero of=$d/fill bs=64K count=16384 2>/dev/null; done; echo "sizes $(${usage})"; sleep ${marker}`;
    await attempt(
      "background commands filling their temporary space past the tenant's budget",
      canary,
      async () => {
        const started = await bashCalls(
          sessionId,
          Array.from({ length: 4 }, () => ({ command: fill, background: true })),
        );
        const ids = started.slice(0, 3).map((result) => /Started background command (cmd_\S+)\./.exec(result.text)?.[1]);
        expect(ids.every(Boolean), JSON.stringify(started)).toBe(true);
        // 24 + 24 + 16 MiB: the third got what the first two left, the fourth nothing.
        expect(started[3]).toMatchObject({ status: "failed", error_code: "sandbox_unavailable" });
        expect(started[3]!.text).toContain("temporary space on this host is taken");
        const reported = await Promise.all(
          ids.map((id) =>
            waitFor(
              async () => sizesIn((await filler.get(`/v1/commands/${id}`)).body.output ?? ""),
              30_000,
              `command ${id} to report its temporary space`,
            ),
          ),
        );
        expect(reported.map((sizes) => sizes.size)).toEqual([24 * mib, 24 * mib, 16 * mib]);
        // Each is full: its folders took all they could (a few KiB go to the file systems' own records).
        for (const sizes of reported) expect(sizes.size - sizes.used).toBeLessThan(mib);
        // What the host holds for them, read from outside: no more than the budget.
        const sandboxes = (await livingWith(marker)).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep\0"));
        expect(sandboxes).toHaveLength(3);
        let held = 0;
        for (const pid of sandboxes) {
          for (const folder of ["tmp", "var/tmp", "dev/shm"]) {
            const fs = statfsSync(`/proc/${pid}/root/${folder}`);
            held += (fs.blocks - fs.bfree) * fs.bsize;
          }
        }
        expect(held).toBeLessThanOrEqual(limits.tmpBudgetBytes);
        expect(held).toBeGreaterThan(limits.tmpBudgetBytes - 8 * mib);
        // A foreground call finds nothing left either, and says so; nothing ran.
        const [refused] = await bashCalls(sessionId, [{ command: "echo should not run" }]);
        expect(refused).toMatchObject({ status: "failed", error_code: "sandbox_unavailable" });
        expect(refused!.text).not.toContain("should not run");
        for (const id of ids) expect((await filler.post(`/v1/commands/${id}/cancel`)).status).toBe(200);
        await waitFor(async () => (await livingWith(marker)).length === 0, 20_000, "the cancelled commands to end");
      },
      { escapeClass: "temp-space" },
    );

    // Their space came back: a foreground call gets its whole share, and writing past it fails in that call only.
    const [foreground] = await bashCalls(sessionId, [{ command: `${usage}; dd if=/dev/zero of=/tmp/fill bs=1M count=1024` }]);
    expect(sizesIn(foreground!.text)?.size).toBe(limits.tmpBytes);
    expect(foreground).toMatchObject({ status: "failed", error_code: "exit_code" });
    expect(foreground!.text).toContain("No space left on device");
    // Another tenant's calls never shared that budget.
    const run = await client.startRun(other, script([[{ tool: "bash", args: { command: usage } }], [{ text: "done" }]]));
    await client.waitForRun(run.body.id);
    const [calm] = await resultsOf(run.body.id);
    expect(sizesIn(calm!.text)?.size).toBe(env.config.toolLimits.tmpBytes);
  }, 180_000);
});
