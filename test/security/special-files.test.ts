import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// FIFOs, devices and sockets through the whole service: the old `read` of a FIFO blocked a thread-pool thread
// for good, and five of them froze every file operation of the process for every tenant.
const { env, client } = useTestEnv({ worker: true });
let outside: string;
let canary: Canary;

beforeAll(async () => {
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-special-")));
  await writeFile(path.join(outside, "canary.txt"), "untouched\n");
  canary = watch([outside]);
});
afterAll(async () => rm(outside, { recursive: true, force: true }));

describe("escape suite: special files", () => {
  it("S6: FIFO reads answer an error within a second while another tenant's runs go on", async () => {
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    for (let i = 0; i < 8; i++) execFileSync("mkfifo", [path.join(workspace, `fifo-${i}`)]);
    await mkdir(path.join(workspace, "dev"), { recursive: true });
    execFileSync("mknod", [path.join(workspace, "dev", "zero"), "c", "1", "5"]);
    const other = await env.newTenant("other");
    const { sessionId: otherSession } = await other.newSession();

    await attempt("block the worker with FIFO, device and write-to-FIFO calls", canary, async () => {
      const calls = [
        ...Array.from({ length: 8 }, (_, i) => ({ tool: "read", args: { path: `fifo-${i}` } })),
        { tool: "read", args: { path: "dev/zero" } },
        { tool: "write", args: { path: "fifo-0", content: "x" } },
        { tool: "edit", args: { path: "fifo-1", old_string: "a", new_string: "b" } },
        { tool: "grep", args: { pattern: "x", glob: "fifo-*" } },
      ];
      const run = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
      // Meanwhile another tenant reads and writes files on the same worker.
      const otherRun = await other.startRun(
        otherSession,
        script([
          [{ tool: "write", args: { path: "a.txt", content: "a\n" } }],
          [{ tool: "read", args: { path: "a.txt" } }],
          [{ text: "done" }],
        ]),
      );
      expect((await client.waitForRun(run.body.id, 20_000)).status).toBe("completed");
      expect((await other.waitForRun(otherRun.body.id, 20_000)).status).toBe("completed");
      const results = await env.query<{ name: string; status: string; error_code: string | null; ended_ms: number }>(
        "select name, status, error_code, extract(epoch from (ended_at - started_at)) * 1000 as ended_ms from tool_calls where run_id = $1 order by call_index",
        [run.body.id],
      );
      expect(results.slice(0, 11).map((r) => r.error_code)).toEqual([
        ...Array.from({ length: 9 }, () => "special_file"),
        "special_file",
        "special_file",
      ]);
      // grep skips what is not a regular file: no match, no hang.
      expect(results[11]).toMatchObject({ status: "succeeded" });
      // Within a second each (SPEC S6): a correctness bound, not a benchmark, since a blocked open never ends at all.
      for (const result of results) expect(Number(result.ended_ms)).toBeLessThan(1000);
    });
  });
});
