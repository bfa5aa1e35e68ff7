import { createHash } from "node:crypto";
import { link, lstat, mkdtemp, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunId, TenantId } from "../../src/ids.js";
import { script } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { attempt, type Canary, watch } from "./escape-ledger.js";

// Workspace checkpoints (SPEC W1) against a hostile model: what its workspace points at outside is
// never read into the store, and a rebuild never writes a link that leads out (S6).
const { env, client } = useTestEnv({ worker: true });
let outside: string;
let canary: Canary;
const secret = "host secret, never a tenant's\n";
const secretDigest = createHash("sha256").update(secret).digest("hex");

beforeAll(async () => {
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-checkpoint-")));
  await writeFile(path.join(outside, "secret.txt"), secret, { mode: 0o600 });
  canary = watch([outside]);
});
afterAll(async () => rm(outside, { recursive: true, force: true }));

async function turn(sessionId: string, calls: unknown[]): Promise<RunId> {
  const run = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
  const ended = await client.waitForRun(run.body.id, 20_000);
  expect(ended.status, JSON.stringify(ended)).toBe("completed");
  return run.body.id as RunId;
}

async function treeOfRun(runId: RunId) {
  const [row] = await env.query<{ id: `ckp_${string}` }>("select id from workspace_checkpoints where run_id = $1 and reason = 'batch'", [
    runId,
  ]);
  return env.services.store.checkpoints.checkpointTree(row!.id);
}

describe("escape suite: checkpoints", () => {
  it("S6, W1: links and a hard link to a host file are kept as what they are; the host file's content never reaches the store, and a rebuild writes no link that leads out", async () => {
    const session = await client.newSession({ approvalMode: "auto" });
    // The model is let run its commands: the gateway's ask is not what this test is about.
    await client.request("PUT", `/v1/projects/${session.projectId}/policy`, { rules: { allow: ["bash"] } });
    const workspace = await env.workspaceOf(session.sessionId);
    const tenantId = client.tenantId as TenantId;
    let first: RunId | undefined;
    // A hard link to a file the tenant does not own (planted here as root: the sandbox cannot make one).
    await link(path.join(outside, "secret.txt"), path.join(workspace, "hard-link.txt"));
    await attempt("links to a host file, captured", canary, async () => {
      first = await turn(session.sessionId, [
        {
          tool: "bash",
          args: {
            command: `ln -s ${outside}/secret.txt absolute-link && ln -s ../../../../../../../..${outside}/secret.txt climbing-link`,
          },
        },
        { tool: "write", args: { path: "inside.txt", content: "inside\n" } },
      ]);
      const tree = await treeOfRun(first);
      expect(tree.get("absolute-link")).toMatchObject({ kind: "symlink", target: `${outside}/secret.txt` });
      expect(tree.get("climbing-link")).toMatchObject({ kind: "symlink" });
      expect(tree.has("hard-link.txt")).toBe(false);
      expect(tree.get("inside.txt")).toMatchObject({ kind: "file" });
      expect((await env.services.store.blobs.storedDigests(tenantId, [secretDigest])).size).toBe(0);
    });
    // The workspace is lost (its hard link with it, which the canary counts), then rebuilt by the next batch.
    await rm(workspace, { recursive: true, force: true });
    await attempt("a rebuild from a checkpoint holding links that lead out", canary, async () => {
      await turn(session.sessionId, [{ tool: "bash", args: { command: "cat inside.txt > again.txt" } }]);
      const names = (await readdir(workspace)).sort();
      expect(names).toEqual(["again.txt", "inside.txt"]);
      await expect(lstat(path.join(workspace, "absolute-link"))).rejects.toThrow();
    });
    expect(first).toBeDefined();
  });
});
