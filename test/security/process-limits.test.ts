import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { killAll, livingWith, uniqueMarker } from "../sandbox/host-processes.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// Tool processes as the tenant's own unprivileged uid, within limits the operator set (SPEC S7), on the real
// worker: one tenant's bombs end its own calls while another tenant's run goes on.
const { env, client } = useTestEnv({ worker: true });
const markers = new Set<string>();
/** Low limits for the bombing tenant, so the bombs cannot hurt the test machine. */
const low = {
  memoryBytes: 512 * 1024 ** 2,
  processes: 64,
  cpuSeconds: 2,
  fileSizeBytes: 8 * 1024 ** 2,
  wallSeconds: 8,
  tmpBytes: 16 * 1024 ** 2,
};
let bomber: ApiClient;
let canary: Canary;

beforeAll(async () => {
  bomber = await env.newTenant("bomber");
  const patched = await env.admin.patch(`/v1/tenants/${bomber.tenantId}`, { limits: low });
  expect(patched.status).toBe(200);
  canary = watch([path.join(env.config.workspaces.dir, String(client.tenantId))]);
});
afterAll(async () => killAll(markers));

const commandOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
};

const toolUidOf = async (tenant: ApiClient): Promise<number> => (await env.admin.get(`/v1/tenants/${tenant.tenantId}`)).body.toolUid;

async function callResults(runId: string) {
  return env.query<{ status: string; error_code: string | null; text: string }>(
    "select status, error_code, result->0->>'text' as text from tool_calls where run_id = $1 order by call_index",
    [runId],
  );
}

describe("escape suite: identity and limits", () => {
  it("S7: tool processes run as the tenant's own uid, never 0; its files and workspace are its own and private", async () => {
    const { sessionId } = await client.newSession();
    const marker = uniqueMarker();
    markers.add(marker);
    const run = await client.startRun(
      sessionId,
      script([[{ tool: "bash", args: { command: `touch made.txt; sleep ${marker}`, timeoutMs: 20_000 } }], [{ text: "done" }]]),
    );
    // The command's own `sleep`: the wrappers that start it (the layer's mount namespace, setpriv) carry
    // the marker too, and are root until they step down.
    const [pid] = await waitFor(
      async () => {
        const found = (await livingWith(marker)).filter((candidate) => commandOf(candidate).startsWith("sleep\0"));
        return found.length > 0 && found;
      },
      20_000,
      "the command to start",
    );
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status)!.slice(1).map(Number);
    const tenantUid = await toolUidOf(client);
    expect(tenantUid).toBeGreaterThan(0);
    if (process.getuid?.() === 0) expect(uids).toEqual([tenantUid, tenantUid, tenantUid, tenantUid]);
    expect(uids).not.toContain(0);
    expect(/^NoNewPrivs:\s+1/m.test(status)).toBe(true);
    await client.post(`/v1/runs/${run.body.id}/cancel`);
    // The command's writes reach the workspace when its call ends (its layer is applied then, SPEC X7).
    const workspace = await env.workspaceOf(sessionId);
    await waitFor(
      async () => (await stat(path.join(workspace, "made.txt")).catch(() => null)) !== null,
      20_000,
      "the cancelled command's layer to be applied",
    );
    const [made, folder] = await Promise.all([stat(path.join(workspace, "made.txt")), stat(workspace)]);
    expect(made.uid).toBe(tenantUid);
    expect(folder.uid).toBe(tenantUid);
    expect(folder.mode & 0o777).toBe(0o700);
    // The folders above it: others may pass, not list.
    expect((await stat(path.dirname(workspace))).mode & 0o777).toBe(0o711);
    expect((await stat(env.config.workspaces.dir)).mode & 0o777).toBe(0o711);
    // Another tenant's processes get another uid.
    expect(await toolUidOf(bomber)).not.toBe(tenantUid);
  });

  it("S7: a setuid binary the model plants gives nobody root: it belongs to the tenant, in a folder no one else may enter", async () => {
    const { sessionId, projectId } = await client.newSession();
    expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["bash"] } })).status).toBe(200);
    const run = await client.startRun(
      sessionId,
      script([
        [{ tool: "bash", args: { command: "cp /usr/bin/id ./suid-id && chmod 4755 ./suid-id && ./suid-id -u" } }],
        [{ text: "done" }],
      ]),
    );
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    const workspace = await env.workspaceOf(sessionId);
    const planted = await stat(path.join(workspace, "suid-id"));
    expect(planted.uid).toBe(await toolUidOf(client));
    expect(planted.uid).not.toBe(0);
    if (process.getuid?.() === 0) {
      await attempt("run a planted setuid binary as another local user", canary, async () => {
        let output = "";
        try {
          // Through a shell: setpriv itself still holds root's capabilities when it execs its first program.
          output = execFileSync(
            "setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", `${path.join(workspace, "suid-id")} -u`],
            { stdio: "pipe" },
          ).toString();
        } catch (error) {
          output = String((error as { stderr?: Buffer }).stderr ?? error);
        }
        expect(output).toMatch(/Permission denied/);
        expect(output.trim()).not.toBe("0");
      });
    }
  });

  it("S7: limits end a memory bomb, a fork bomb and disk fillers with is_error results while another tenant's run completes", async () => {
    const { sessionId: bombs, projectId } = await bomber.newSession({ approvalMode: "auto" });
    // The gateway would ask about /tmp and the shell function; a rule lets them run, so the limits are what is tested (S1).
    expect((await bomber.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["bash"] } })).status).toBe(200);
    const { sessionId: calm } = await client.newSession();
    const bombRun = await bomber.startRun(
      bombs,
      script([
        [
          { tool: "bash", args: { command: "python3 -c 'a = []\nwhile True: a.append(bytearray(32 << 20))'" } },
          // Each level waits for its children: the tree stays at the process limit until the wall-time limit ends it.
          { tool: "bash", args: { command: "bomb() { bomb | bomb & wait; }; bomb", timeoutMs: 600_000 } },
          { tool: "bash", args: { command: "dd if=/dev/zero of=filler bs=1M count=1024" } },
          // Files under the size limit each, filling the private /tmp.
          { tool: "bash", args: { command: "for i in 1 2 3 4; do dd if=/dev/zero of=/tmp/filler-$i bs=1M count=7 || exit 1; done" } },
          { tool: "bash", args: { command: "python3 -c 'while True: pass'", timeoutMs: 600_000 } },
        ],
        [{ text: "done" }],
      ]),
    );
    // Meanwhile another tenant's work goes on, processes and files alike.
    const calmRun = await client.startRun(
      calm,
      script([
        [{ tool: "bash", args: { command: "seq 1 1000 | tail -n 1" } }],
        [{ tool: "write", args: { path: "notes.txt", content: "still fine\n" } }],
        [{ tool: "bash", args: { command: "cat notes.txt && echo $((6 * 7))" } }],
        [{ text: "done" }],
      ]),
    );
    expect((await client.waitForRun(calmRun.body.id, 60_000)).status).toBe("completed");
    const calmResults = await callResults(calmRun.body.id);
    expect(calmResults.map((result) => result.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(calmResults[2]!.text).toContain("still fine\n42");
    // What the bombs must not touch: the other tenant's workspace.
    canary = watch([await env.workspaceOf(calm)]);

    await attempt("memory, process, file-size, temporary-space and CPU bombs", canary, async () => {
      expect((await bomber.waitForRun(bombRun.body.id, 120_000)).status).toBe("completed");
      const results = await callResults(bombRun.body.id);
      const [memory, fork, disk, tmp, cpu] = results;
      expect(memory).toMatchObject({ status: "failed", error_code: "exit_code" });
      expect(memory!.text).toContain("MemoryError");
      expect(memory!.text).toContain("this call's limits: memory 512 MiB per process");
      // The fork bomb hits the process limit and runs until the wall-time limit ends its whole tree.
      expect(fork).toMatchObject({ status: "failed", error_code: "timeout" });
      expect(fork!.text).toContain("fork: retry: Resource temporarily unavailable");
      expect(disk).toMatchObject({ status: "failed", error_code: "file_size_limit" });
      expect(disk!.text).toContain("a file reached the size limit of 8388608 bytes");
      expect(tmp).toMatchObject({ status: "failed", error_code: "exit_code" });
      expect(tmp!.text).toContain("No space left on device");
      expect(cpu).toMatchObject({ status: "failed", error_code: "cpu_limit" });
    });
    // Nothing of the bomber's is left running, and its file stopped at the limit.
    const bomberUid = await toolUidOf(bomber);
    const left = () =>
      execFileSync("ps", ["-e", "-o", "uid=,pid=,stat=,comm="], { encoding: "utf8" })
        .split("\n")
        .filter((line) => line.trim().split(/\s+/)[0] === String(bomberUid));
    // A sandbox's bwrap exits a moment after its namespace was killed.
    await waitFor(async () => left().length === 0, 5_000, `no process of uid ${bomberUid}: ${left().join("; ")}`);
    expect((await stat(path.join(await env.workspaceOf(bombs), "filler"))).size).toBeLessThanOrEqual(low.fileSizeBytes);
  }, 180_000);
});
