import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { processGroup, type FoyaProcess } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";
import { killAll, survivorsAfter, uniqueMarker } from "../sandbox/host-processes.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// Full Access (SPEC S8): granted by the operator, never chosen by a tenant; and even granted, a call's
// processes are one tree in their own PID namespace that dies with the call and with its worker.
let env: TestEnv;
let granted: ApiClient;
let ungranted: ApiClient;
let canary: Canary;
let outside: string;
const processes = processGroup();
const markers = new Set<string>();

const startWorker = (): Promise<FoyaProcess> => processes.start("worker", env.env);

beforeAll(async () => {
  env = await createTestEnv();
  granted = await env.newTenant("granted", { fullAccess: true });
  ungranted = await env.newTenant("ungranted");
  // What a Full Access command could reach on the host and must leave alone.
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-full-access-")));
  await writeFile(path.join(outside, "canary.txt"), "untouched\n");
  canary = watch([outside]);
});
afterAll(async () => {
  await processes.killAll();
  await killAll(markers);
  await env?.close();
  await rm(outside, { recursive: true, force: true });
});

describe("escape suite: Full Access", () => {
  it("S8: Full Access refused without the operator grant (403 with a clear message), by session and by run", async () => {
    await attempt("create a Full Access session without the grant", canary, async () => {
      const project = await ungranted.post<{ id: string }>("/v1/projects", { name: "p" });
      const refused = await ungranted.post("/v1/sessions", { projectId: project.body.id, approvalMode: "full_access" });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({
        code: "full_access_not_granted",
        message: expect.stringContaining('PATCH /v1/tenants/{id} {"fullAccess": true}'),
      });
    });
    await attempt("start a sub-agent wider than its session", canary, async () => {
      const { sessionId } = await ungranted.newSession({ approvalMode: "auto" });
      const run = await ungranted.startRun(
        sessionId,
        script([[{ tool: "agent", args: { task: "x", approvalMode: "full_access" } }], [{ text: "done" }]]),
      );
      expect(run.status).toBe(202);
      await startWorker();
      expect((await ungranted.waitForRun(run.body.id, 30_000)).status).toBe("completed");
      const [call] = await env.query<{ status: string; error_code: string }>(
        "select status, error_code from tool_calls where run_id = $1",
        [run.body.id],
      );
      expect(call).toMatchObject({ status: "failed" });
    });
    // A grant revoked: runs of its sessions are refused from then on.
    const { sessionId } = await granted.newSession({ approvalMode: "full_access" });
    expect((await env.admin.patch(`/v1/tenants/${granted.tenantId}`, { fullAccess: false })).status).toBe(200);
    await attempt("start a run in a Full Access session whose grant was revoked", canary, async () => {
      const refused = await granted.startRun(sessionId, script([[{ tool: "bash", args: { command: "id" } }], [{ text: "done" }]]));
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe("full_access_not_granted");
    });
    expect((await env.admin.patch(`/v1/tenants/${granted.tenantId}`, { fullAccess: true })).status).toBe(200);

    // Revoked while a run goes on: a sub-agent it then starts cannot carry Full Access on.
    const running = await granted.startRun(
      sessionId,
      script([
        [{ tool: "marker_sleep", args: { marker: "revoke", sleepMs: 1500 } }],
        [{ tool: "agent", args: { task: "x" } }],
        [{ text: "done" }],
      ]),
    );
    expect(running.status).toBe(202);
    const workspace = await env.workspaceOf(sessionId);
    await waitFor(async () => (await readMarkers(workspace, "revoke")).length === 1, 20_000, "the first step's tool");
    expect((await env.admin.patch(`/v1/tenants/${granted.tenantId}`, { fullAccess: false })).status).toBe(200);
    await attempt("start a Full Access sub-agent after the grant was revoked", canary, async () => {
      expect((await granted.waitForRun(running.body.id, 30_000)).status).toBe("completed");
      const calls = await env.query<{ name: string; error_code: string | null }>(
        "select name, error_code from tool_calls where run_id = $1 order by created_at",
        [running.body.id],
      );
      expect(calls.find((call) => call.name === "agent")).toMatchObject({ error_code: "full_access_not_granted" });
    });
    expect((await env.admin.patch(`/v1/tenants/${granted.tenantId}`, { fullAccess: true })).status).toBe(200);
  });

  for (const approvalMode of ["full_access", "auto"] as const) {
    it(`S8: with the grant, a SIGKILLed worker leaves no process of the call alive, foreground and background (${approvalMode})`, async () => {
      await processes.killAll();
      const worker = await startWorker();
      const { sessionId, projectId } = await granted.newSession({ approvalMode });
      // In Auto the gateway would ask about setsid and nohup; a rule lets the commands run, so confinement is what is tested.
      await granted.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["bash"] } });
      const foreground = uniqueMarker();
      const background = uniqueMarker();
      for (const marker of [foreground, background]) markers.add(marker);
      const run = await granted.startRun(
        sessionId,
        script([
          [
            {
              tool: "bash",
              args: {
                command: `setsid sleep ${background} > /dev/null 2>&1 & nohup sleep ${background} > /dev/null 2>&1 & sleep ${background}`,
                background: true,
              },
            },
            {
              tool: "bash",
              args: {
                command: `(sleep ${foreground} &); setsid sleep ${foreground} > /dev/null 2>&1 & nohup sleep ${foreground} > /dev/null 2>&1 & sleep ${foreground}`,
                timeoutMs: 600_000,
              },
            },
          ],
          [{ text: "never" }],
        ]),
      );
      expect(run.status).toBe(202);
      await waitFor(
        async () => (await survivorsAfter(foreground, 0)).length >= 4 && (await survivorsAfter(background, 0)).length >= 3,
        30_000,
        "both trees to start",
      );
      worker.kill("SIGKILL");
      expect((await worker.exited).signal).toBe("SIGKILL");
      await attempt(`outlive a SIGKILLed worker (${approvalMode})`, canary, async () => {
        expect(await survivorsAfter(foreground, 3000)).toEqual([]);
        expect(await survivorsAfter(background, 3000)).toEqual([]);
      });
      // The call that was cut off is never run again (D3): a new worker marks it interrupted.
      await startWorker();
      expect((await granted.waitForRun(run.body.id, 60_000)).status).toBe("interrupted");
      expect(await survivorsAfter(foreground, 0)).toEqual([]);
    }, 120_000);
  }
});
