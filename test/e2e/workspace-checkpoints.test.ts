import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKnownTrees } from "../../src/checkpoints/known-trees.js";
import { restoreMissingWorkspace } from "../../src/checkpoints/restore-workspace.js";
import { treeOfStored } from "../../src/checkpoints/stored-tree.js";
import type { CheckpointId, RunId, SessionId, TenantId } from "../../src/ids.js";
import { fullCheckpointEvery } from "../../src/store/checkpoints.js";
import { materializeTree } from "../../src/workspace/checkpoint/materialize.js";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { processGroup, type FoyaProcess } from "../helpers/processes.js";
import { folderSnapshot } from "../helpers/folder-snapshot.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * Workspace checkpoints (SPEC W1): after every batch that may change the workspace, the tree is
 * in Postgres; each checkpoint rebuilds the workspace exactly as it stood after its step, and a
 * workspace folder that is gone is rebuilt from its latest checkpoint before the next batch runs.
 */
const run = promisify(execFile);
let env: TestEnv;
let client: ApiClient;
let scratch: string;
const processes = processGroup();
const startWorker = (extra: Record<string, string> = {}) => processes.start("worker", { ...env.env, ...extra });
/** The worker tests share, and the settings it was started with. */
let shared: { worker: FoyaProcess; settings: string } | undefined;
/**
 * The only worker, started with `settings` (the defaults when none): the one the test before left
 * if it has the same settings, since a worker start costs about a second of CPU; else a new one.
 */
async function useWorker(settings: Record<string, string> = {}): Promise<FoyaProcess> {
  const key = JSON.stringify(settings);
  if (shared?.settings === key) return shared.worker;
  await stopWorkers();
  shared = { worker: await startWorker(settings), settings: key };
  return shared.worker;
}
/** For a test that starts workers of its own: none of the others is left. */
async function stopWorkers(): Promise<void> {
  await processes.killAll();
  shared = undefined;
}
/** Runs `check` on every item, a few at a time: the checks of many steps read Postgres and walk folders independently. */
async function forEachConcurrently<T>(items: T[], check: (item: T, index: number) => Promise<void>, width = 6): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      await check(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
}

beforeAll(async () => {
  // A killed worker's jobs come back within a quarter second of its BullMQ lock lapsing, not a
  // second: the lock, not how often this check runs, says whether a job is stalled.
  env = await createTestEnv({ FOYA_STALLED_INTERVAL_MS: "250" });
  client = await env.newTenant();
  scratch = await mkdtemp(path.join(env.config.workspaces.dir, "..", "checkpoint-copies-"));
});
afterAll(async () => {
  await processes.killAll();
  await rm(scratch, { recursive: true, force: true });
  await env?.close();
});

type Call = { tool: string; args: Record<string, unknown> };

/**
 * One turn: the model makes these calls in one step, then answers; resolves with the run once it
 * completed. What the gateway asks about (rm -rf, a background command) a person approves.
 */
async function turn(sessionId: SessionId, calls: Call[]): Promise<RunId> {
  const started = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
  expect(started.status).toBe(202);
  const runId = started.body.id as RunId;
  const ended = await waitFor(
    async () => {
      const current = (await client.get(`/v1/runs/${runId}`)).body;
      if (current.status === "awaiting_approval") {
        const pending = await client.get(`/v1/approvals?runId=${runId}&status=pending`);
        for (const approval of pending.body.approvals) await client.post(`/v1/approvals/${approval.id}`, { decision: "approve" });
      }
      return ["completed", "failed", "cancelled", "interrupted"].includes(current.status) ? current : null;
    },
    60_000,
    `run ${runId} to end`,
  );
  expect(ended.status, JSON.stringify(ended)).toBe("completed");
  return runId;
}

const bash = (command: string, background = false): Call => ({ tool: "bash", args: background ? { command, background } : { command } });
const write = (file: string, content: string): Call => ({ tool: "write", args: { path: file, content } });
const edit = (file: string, from: string, to: string): Call => ({ tool: "edit", args: { path: file, old_string: from, new_string: to } });
const remove = (file: string): Call => ({ tool: "delete", args: { path: file } });
const git = "git -c user.email=agent@example.com -c user.name=agent";

/** Thirty turns of write, edit, delete and bash: git, an npm-like tree, rm -rf, chmod, links inside, a background command. */
const turns: Call[][] = [
  [write("README.md", "# demo\n"), write("src/main.js", "console.log('one');\n")],
  [bash(`git init -q && ${git} add -A && ${git} commit -qm one`)],
  [edit("src/main.js", "one", "two")],
  [
    bash(
      "mkdir -p node_modules/left-pad/lib node_modules/.bin && printf 'module.exports = 1;\\n' > node_modules/left-pad/lib/index.js && printf '{\"name\":\"left-pad\"}\\n' > node_modules/left-pad/package.json",
    ),
  ],
  [bash("printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh")],
  [bash("ln -s src/main.js main-link.js && ln -s ../left-pad node_modules/.bin/left-pad && ln -s missing-inside dangling")],
  [write("notes/a.txt", "a\n"), write("notes/b.txt", "b\n")],
  [bash(`${git} add -A && ${git} commit -qm two`)],
  [remove("notes/a.txt")],
  [bash("mkdir -p empty/inner && chmod 700 empty")],
  [bash("chmod 600 README.md")],
  [edit("README.md", "# demo", "# demo, edited")],
  [bash("rm -rf node_modules")],
  [bash("mkdir -p node_modules/pkg && for i in 1 2 3 4 5 6 7 8; do echo $i > node_modules/pkg/f$i.js; done")],
  [
    write("src/util.js", "export const x = 1;\n"),
    edit("src/main.js", "two", "three"),
    write("bg.sh", "sleep 2; echo background > bg.txt\n"),
  ],
  [bash("sh bg.sh", true)],
  [write("wait.txt", "the background command may still run\n")],
  [bash(`${git} add -A && ${git} commit -qm three && ${git} tag v1`)],
  [bash("mv notes docs && chmod 640 docs/b.txt")],
  [remove("wait.txt")],
  [bash("dd if=/dev/urandom of=blob.bin bs=1024 count=300 status=none")],
  [bash("cp blob.bin blob-copy.bin && truncate -s 100 blob.bin")],
  [edit("src/util.js", "x = 1", "x = 2")],
  [bash("rm -f main-link.js && ln -s src/util.js main-link.js")],
  [bash("mkdir -p a/b/c/d/e && echo deep > a/b/c/d/e/f.txt && chmod 711 a/b")],
  [bash(`${git} rm -q --cached blob-copy.bin && ${git} commit -qm four`)],
  [write("empty-file", "")],
  [bash("rm -rf a && chmod 4755 run.sh")],
  [bash(`${git} gc -q --prune=now`)],
  [write("final.txt", "thirty\n")],
];

async function checkpointOfRun(runId: RunId): Promise<{ id: CheckpointId; seq: number }> {
  const rows = await env.query<{ id: CheckpointId; seq: number }>(
    "select id, seq from workspace_checkpoints where run_id = $1 and reason = 'batch'",
    [runId],
  );
  expect(rows).toHaveLength(1);
  return rows[0] as { id: CheckpointId; seq: number };
}

async function materialize(checkpointId: CheckpointId, tenantId: TenantId, into: string): Promise<void> {
  const { entries } = treeOfStored(await env.services.store.checkpoints.checkpointTree(checkpointId));
  await mkdir(into);
  const written = await materializeTree(into, entries, {
    blob: async (sha256) => (await env.services.store.blobs.getBlob(tenantId, sha256)) ?? null,
  });
  expect(written.ok, JSON.stringify(written)).toBe(true);
}

describe("workspace checkpoints", () => {
  it("W1: each of 30 steps mixing write, edit, delete, git, an npm-like tree, rm -rf, chmod, links and a background command materializes byte- and mode-identical to the workspace after it", async () => {
    await useWorker();
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const steps: Array<{ runId: RunId; copy: string }> = [];
    for (const [index, calls] of turns.entries()) {
      const runId = await turn(sessionId, calls);
      const copy = path.join(scratch, `step-${index + 1}`);
      await run("cp", ["-a", workspace, copy]);
      steps.push({ runId, copy });
      // The background command writes after its batch's checkpoint; the next turns wait for it, so later copies hold it.
      if (index === 15)
        await waitFor(async () => (await lstat(path.join(workspace, "bg.txt")).catch(() => null)) !== null, 20_000, "bg.txt");
    }
    const seqs: number[] = [];
    await forEachConcurrently(steps, async (step, index) => {
      const checkpoint = await checkpointOfRun(step.runId);
      seqs[index] = checkpoint.seq;
      const rebuilt = path.join(scratch, `rebuilt-${index + 1}`);
      await materialize(checkpoint.id, client.tenantId as TenantId, rebuilt);
      expect(await folderSnapshot(rebuilt), `step ${index + 1}`).toEqual(await folderSnapshot(step.copy));
    });
    // One checkpoint per batch, in order. What the background command wrote after its batch closed is in the next
    // batch's checkpoint (step 17), though no tool of Foya wrote it.
    expect(seqs).toEqual(Array.from({ length: turns.length }, (_, index) => index + 1));
    const step17 = await env.services.store.checkpoints.checkpointTree((await checkpointOfRun(steps[16]!.runId)).id);
    expect(step17.get("bg.txt")).toMatchObject({ kind: "file", size: "background\n".length });
    expect((await folderSnapshot(steps[15]!.copy)).some((line) => line.startsWith("f bg.txt"))).toBe(false);
    // Deltas in between, a full tree every 16: storage follows what changed, not the workspace's size.
    const kinds = await env.query<{ full: boolean; entries: number }>(
      `select c.base_id is null as full, (select count(*)::int from checkpoint_entries e where e.checkpoint_id = c.id) as entries
       from workspace_checkpoints c join runs r on r.id = c.run_id where r.session_id = $1 order by c.seq`,
      [sessionId],
    );
    expect(kinds.map((row) => row.full)).toEqual(kinds.map((_, index) => index % 16 === 0));
    expect(kinds).toHaveLength(turns.length);
    const total = kinds.at(-1)!;
    expect(total.full).toBe(false);
  }, 240_000);

  it("W1: batches whose calls say what they changed (door writes, a layered bash call) alternate with a background command, and every checkpoint still equals the folder after its step", async () => {
    await useWorker();
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const mixed: Call[][] = [
      [write("a.txt", "a\n"), write("deep/er/b.txt", "b\n")],
      [write("c.txt", "c\n")],
      [bash("mkdir -p d/e && echo x > d/e/f.txt && chmod 700 d && rm a.txt && chmod 600 c.txt")],
      [edit("c.txt", "c", "see")],
      [bash("sleep 2; echo bg > bg.txt; mkdir -p bg-dir && echo in > bg-dir/in.txt", true)],
      [write("while-running.txt", "the background command runs\n")],
      [remove("deep")],
      [write("after.txt", "the background command ended\n")],
      [bash("ln -s c.txt link && mv d dd && rm -rf bg-dir")],
      [edit("after.txt", "ended", "ended long ago")],
      [write("dd/e/g.txt", "g\n"), remove("c.txt")],
      [bash("echo more >> dd/e/f.txt && mkdir -p new/one/two && echo n > new/one/two/n.txt")],
    ];
    const steps: Array<{ runId: RunId; copy: string }> = [];
    for (const [index, calls] of mixed.entries()) {
      const runId = await turn(sessionId, calls);
      const copy = path.join(scratch, `mixed-${index + 1}`);
      await run("cp", ["-a", workspace, copy]);
      steps.push({ runId, copy });
      if (index === 5)
        await waitFor(async () => (await lstat(path.join(workspace, "bg-dir")).catch(() => null)) !== null, 20_000, "bg-dir");
    }
    await forEachConcurrently(steps, async (step, index) => {
      const checkpoint = await checkpointOfRun(step.runId);
      const rebuilt = path.join(scratch, `mixed-rebuilt-${index + 1}`);
      await materialize(checkpoint.id, client.tenantId as TenantId, rebuilt);
      expect(await folderSnapshot(rebuilt), `step ${index + 1}`).toEqual(await folderSnapshot(step.copy));
    });
  }, 240_000);

  it("W1, D3: a batch closed as interrupted after its worker was SIGKILLed mid-command has its checkpoint, holding what the command wrote before", async () => {
    // The only worker runs the command, and is the one killed.
    const worker = await useWorker();
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await turn(sessionId, [write("before.txt", "before\n")]);
    const started = await client.startRun(sessionId, script([[bash("echo partial > written.txt && sleep 60")], [{ text: "never" }]]));
    const runId = started.body.id as RunId;
    // The command's write sits in its layer until the call is settled; wait for its content there.
    const layers = path.join(env.config.workspaces.dir, ".calls");
    await waitFor(
      async () => {
        for (const name of await readdir(layers).catch(() => [] as string[]))
          if ((await readFile(path.join(layers, name, "upper", "written.txt"), "utf8").catch(() => "")) === "partial\n") return true;
        return false;
      },
      20_000,
      "the command to write in its layer",
    );
    worker.kill("SIGKILL");
    await worker.exited;
    await stopWorkers();
    await useWorker();
    expect((await client.waitForRun(runId, 30_000)).status).toBe("interrupted");
    const checkpoint = await checkpointOfRun(runId);
    const tree = await env.services.store.checkpoints.checkpointTree(checkpoint.id);
    expect(tree.get("written.txt")).toMatchObject({ kind: "file", size: "partial\n".length });
    expect(tree.get("before.txt")).toMatchObject({ kind: "file" });
    const rebuilt = path.join(scratch, "interrupted");
    await materialize(checkpoint.id, client.tenantId as TenantId, rebuilt);
    expect(await folderSnapshot(rebuilt)).toEqual(await folderSnapshot(workspace));
  }, 120_000);

  it("W1, X5: what checkpoints keep counts in the tenant's storageBytes, and its quota refuses the next run", async () => {
    await useWorker();
    const tenant = await env.newTenant("checkpoint storage");
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const before = (await tenant.get("/v1/usage")).body.usage.storageBytes as number;
    // Under node_modules file-change records only summarize: the 300 KB are kept by the checkpoint alone.
    const started = await tenant.startRun(
      sessionId,
      script([[bash("mkdir -p node_modules/big && head -c 300000 /dev/urandom > node_modules/big/blob.bin")], [{ text: "done" }]]),
    );
    expect((await tenant.waitForRun(started.body.id, 60_000)).status).toBe("completed");
    const after = (await tenant.get("/v1/usage")).body.usage.storageBytes as number;
    expect(after - before).toBeGreaterThanOrEqual(300_000);
    expect(await env.query("select path from file_changes where session_id = $1 and path like 'node_modules/big/%'", [sessionId])).toEqual(
      [],
    );
    const patch = (quotas: object) => env.admin.request("PATCH", `/v1/tenants/${tenant.tenantId}`, { quotas });
    await patch({ storageBytes: 100_000 });
    const refused = await tenant.startRun(sessionId, script([[{ text: "more" }]]));
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/its storageBytes quota is 100000/);
    await patch({ storageBytes: null });
  }, 120_000);

  it("W1: a workspace folder deleted between two turns is rebuilt from its latest checkpoint before the next batch runs, with a workspace_restored event", async () => {
    await useWorker();
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const first = await turn(sessionId, [
      write("kept.txt", "kept\n"),
      bash("mkdir -p sub && echo inner > sub/inner.txt && chmod 640 sub/inner.txt"),
    ]);
    const before = await folderSnapshot(workspace);
    await rm(workspace, { recursive: true, force: true });
    const second = await turn(sessionId, [bash("cat kept.txt sub/inner.txt > both.txt")]);
    expect(await readFile(path.join(workspace, "both.txt"), "utf8")).toBe("kept\ninner\n");
    expect((await folderSnapshot(workspace)).filter((line) => !line.includes("both.txt"))).toEqual(before);
    const events = await env.query<{ type: string; data: { checkpointSeq: number; files: number } }>(
      "select type, data from events where session_id = $1 and type = 'workspace_restored'",
      [sessionId],
    );
    const restoredFrom = await checkpointOfRun(first);
    expect(events).toEqual([
      { type: "workspace_restored", data: expect.objectContaining({ reason: "missing", checkpointSeq: restoredFrom.seq, files: 2 }) },
    ]);
    // The restored workspace's next checkpoint is taken as usual; the session lists both, with their runs and steps.
    expect((await checkpointOfRun(second)).seq).toBe(restoredFrom.seq + 1);
    const listed = await client.get(`/v1/sessions/${sessionId}/checkpoints`);
    expect(listed.status).toBe(200);
    expect(listed.body.checkpoints).toEqual([
      expect.objectContaining({
        id: restoredFrom.id,
        seq: restoredFrom.seq,
        runId: first,
        stepIndex: 0,
        reason: "batch",
        full: true,
        entryCount: 3,
        fileBytes: 11,
      }),
      expect.objectContaining({
        seq: restoredFrom.seq + 1,
        runId: second,
        stepIndex: 0,
        reason: "batch",
        full: false,
        entryCount: 4,
        fileBytes: 22,
      }),
    ]);
    const other = await env.newTenant("another");
    expect((await other.get(`/v1/sessions/${sessionId}/checkpoints`)).status).toBe(404);
  }, 120_000);

  it("W1: a deleted project's missing workspace is never brought back from its checkpoints", async () => {
    await useWorker();
    const { projectId, sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await turn(sessionId, [write("secret.txt", "gone with the project\n")]);
    expect((await client.delete(`/v1/projects/${projectId}`)).status).toBe(204);
    await waitFor(async () => (await lstat(workspace).catch(() => null)) === null, 30_000, "the project's files to be removed");
    const restored = await restoreMissingWorkspace(
      { store: env.services.store, knownTrees: createKnownTrees() },
      { tenantId: client.tenantId as TenantId, projectId, workspaceDir: workspace, identity: null },
    );
    expect(restored.kind).toBe("project_deleted");
    await expect(lstat(workspace)).rejects.toThrow();
  }, 120_000);

  it("W1: by default a person's edit between two turns is kept: never rebuilt over, and in the checkpoints from the next full one on", async () => {
    await useWorker();
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await turn(sessionId, [write("data.txt", "written by the model\n")]);
    await writeFile(path.join(workspace, "data.txt"), "edited by a person\n");
    const second = await turn(sessionId, [bash("cp data.txt seen.txt")]);
    expect(await readFile(path.join(workspace, "seen.txt"), "utf8")).toBe("edited by a person\n");
    // A batch whose calls said what they changed captures those paths only: the edit is seen by the next walk of the whole
    // folder, at the latest the next full checkpoint (every `fullCheckpointEvery`).
    const secondTree = await env.services.store.checkpoints.checkpointTree((await checkpointOfRun(second)).id);
    expect(secondTree.get("seen.txt")?.size).toBe("edited by a person\n".length);
    expect(secondTree.get("data.txt")?.size).toBe("written by the model\n".length);
    let full: CheckpointId | undefined;
    for (let index = 0; index < fullCheckpointEvery && full === undefined; index++) {
      const runId = await turn(sessionId, [write(`later-${index}.txt`, `${index}\n`)]);
      const [row] = await env.query<{ id: CheckpointId; base_id: string | null }>(
        "select id, base_id from workspace_checkpoints where run_id = $1 order by seq",
        [runId],
      );
      if (row?.base_id === null) full = row.id;
    }
    expect(full).toBeDefined();
    const caught = await env.services.store.checkpoints.checkpointTree(full as CheckpointId);
    expect(caught.get("data.txt")?.size).toBe("edited by a person\n".length);
    expect(await readFile(path.join(workspace, "data.txt"), "utf8")).toBe("edited by a person\n");
    expect(await env.query("select 1 from events where session_id = $1 and type = 'workspace_restored'", [sessionId])).toEqual([]);
  }, 180_000);

  it("W1: a file over FOYA_CHECKPOINT_MAX_FILE_BYTES is never read whole into memory for a checkpoint: kept by size and digest, left out of a rebuild, and named in workspace_restored", async () => {
    await useWorker({ FOYA_CHECKPOINT_MAX_FILE_BYTES: "4096" });
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    // Under node_modules, where the command's file-change records keep no content either.
    const first = await turn(sessionId, [
      bash("mkdir -p node_modules/x && head -c 20000 /dev/urandom > node_modules/x/big.bin && echo small > small.txt"),
    ]);
    const tree = await env.services.store.checkpoints.checkpointTree((await checkpointOfRun(first)).id);
    const big = tree.get("node_modules/x/big.bin");
    expect(big).toMatchObject({ kind: "file", size: 20_000 });
    expect(await env.services.store.blobs.getBlob(client.tenantId as TenantId, big!.sha256!)).toBeUndefined();
    await rm(workspace, { recursive: true, force: true });
    await turn(sessionId, [bash("cat small.txt > again.txt")]);
    expect(await readFile(path.join(workspace, "again.txt"), "utf8")).toBe("small\n");
    await expect(lstat(path.join(workspace, "node_modules/x/big.bin"))).rejects.toThrow();
    expect((await lstat(path.join(workspace, "node_modules/x"))).isDirectory()).toBe(true);
    const events = await env.query<{ data: { reason: string; filesNotRestored: string[]; files: number } }>(
      "select data from events where session_id = $1 and type = 'workspace_restored'",
      [sessionId],
    );
    expect(events.map((event) => event.data)).toEqual([
      expect.objectContaining({ reason: "missing", files: 1, filesNotRestored: ["node_modules/x/big.bin"] }),
    ]);
  }, 120_000);

  /** The sha256 of a workspace file, read by plain fs. */
  const digestOfFile = async (file: string) =>
    createHash("sha256")
      .update(await readFile(file))
      .digest("hex");
  const chunkRows = async (tenantId: string, sha256: string) =>
    (
      await env.query<{ count: number; longest: number | null }>(
        "select count(*)::int as count, max(octet_length(bytes))::int as longest from content_blob_chunks where tenant_id = $1 and sha256 = $2",
        [tenantId, sha256],
      )
    )[0];
  const restoredEvents = async (sessionId: SessionId) =>
    (
      await env.query<{ data: { reason: string; filesNotRestored: string[]; files: number } }>(
        "select data from events where session_id = $1 and type = 'workspace_restored'",
        [sessionId],
      )
    ).map((event) => event.data);
  // Under node_modules, where a command's file-change records keep no content: the checkpoint alone stores it.
  const bigFile = (bytes: number) =>
    bash(`mkdir -p node_modules/big && head -c ${bytes} /dev/urandom > node_modules/big/blob.bin && echo small > small.txt`);

  it("W1: a file twenty chunks long is checkpointed in chunks, no row holding more than one, and a rebuild streams it back byte-identical", async () => {
    await useWorker({ FOYA_BLOB_CHUNK_BYTES: String(256 * 1024) });
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const first = await turn(sessionId, [bigFile(5 * 1024 * 1024)]);
    const digest = await digestOfFile(path.join(workspace, "node_modules/big/blob.bin"));
    const tree = await env.services.store.checkpoints.checkpointTree((await checkpointOfRun(first)).id);
    expect(tree.get("node_modules/big/blob.bin")).toMatchObject({ kind: "file", size: 5 * 1024 * 1024, sha256: digest });
    expect(await chunkRows(client.tenantId as string, digest)).toEqual({ count: 20, longest: 256 * 1024 });
    const before = await folderSnapshot(workspace);
    await rm(workspace, { recursive: true, force: true });
    await turn(sessionId, [bash("sha256sum node_modules/big/blob.bin > sum.txt")]);
    expect(await readFile(path.join(workspace, "sum.txt"), "utf8")).toBe(`${digest}  node_modules/big/blob.bin\n`);
    expect((await folderSnapshot(workspace)).filter((line) => !line.includes("sum.txt"))).toEqual(before);
    expect(await restoredEvents(sessionId)).toEqual([expect.objectContaining({ reason: "missing", files: 2, filesNotRestored: [] })]);
  }, 120_000);

  it("W1: a large blob whose writer was SIGKILLed half-way is never used; the next worker's checkpoint finishes it and the rebuild is byte-identical", async () => {
    await stopWorkers();
    const crashing = await startWorker({
      FOYA_BLOB_CHUNK_BYTES: String(256 * 1024),
      FOYA_FAILPOINTS: "worker.checkpoint_blob_chunk_written",
    });
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const started = await client.startRun(sessionId, script([[bigFile(3 * 1024 * 1024)], [{ text: "done" }]]));
    expect((await crashing.exited).signal).toBe("SIGKILL");
    const runId = started.body.id as RunId;
    const digest = await digestOfFile(path.join(workspace, "node_modules/big/blob.bin"));
    // Two chunks of twelve written, then the kill: the header says incomplete, and nothing reads it.
    expect(
      await env.query("select complete, chunk_bytes from content_blobs where tenant_id = $1 and sha256 = $2", [client.tenantId, digest]),
    ).toEqual([{ complete: false, chunk_bytes: 256 * 1024 }]);
    expect((await chunkRows(client.tenantId as string, digest))?.count).toBe(2);
    expect(await env.services.store.blobs.storedDigests(client.tenantId as TenantId, [digest])).toEqual(new Set());
    expect(await env.query("select id from workspace_checkpoints where run_id = $1", [runId])).toEqual([]);
    // A worker with the default chunk length takes the blob over at the length it was started with.
    await useWorker();
    expect((await client.waitForRun(runId, 60_000)).status).toBe("completed");
    await checkpointOfRun(runId);
    expect(
      await env.query("select complete, chunk_bytes from content_blobs where tenant_id = $1 and sha256 = $2", [client.tenantId, digest]),
    ).toEqual([{ complete: true, chunk_bytes: 256 * 1024 }]);
    expect((await chunkRows(client.tenantId as string, digest))?.count).toBe(12);
    const before = await folderSnapshot(workspace);
    await rm(workspace, { recursive: true, force: true });
    await turn(sessionId, [bash("cat small.txt > again.txt")]);
    expect((await folderSnapshot(workspace)).filter((line) => !line.includes("again.txt"))).toEqual(before);
  }, 120_000);

  it("W1, X5: a file whose content would pass the tenant's storageBytes is kept by digest only; the batch closes with its checkpoint, and a rebuild names the file", async () => {
    await useWorker();
    const tenant = await env.newTenant("checkpoint quota");
    await env.admin.request("PATCH", `/v1/tenants/${tenant.tenantId}`, { quotas: { storageBytes: 2 * 1024 * 1024 } });
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const first = await tenant.startRun(sessionId, script([[bigFile(3 * 1024 * 1024)], [{ text: "done" }]]));
    expect((await tenant.waitForRun(first.body.id, 60_000)).status).toBe("completed");
    const digest = await digestOfFile(path.join(workspace, "node_modules/big/blob.bin"));
    const tree = await env.services.store.checkpoints.checkpointTree((await checkpointOfRun(first.body.id)).id);
    expect(tree.get("node_modules/big/blob.bin")).toMatchObject({ kind: "file", sha256: digest });
    expect(await env.query("select 1 from content_blobs where tenant_id = $1 and sha256 = $2", [tenant.tenantId, digest])).toEqual([]);
    expect((await tenant.get("/v1/usage")).body.usage.storageBytes).toBeLessThan(2 * 1024 * 1024);
    await rm(workspace, { recursive: true, force: true });
    const second = await tenant.startRun(sessionId, script([[bash("cat small.txt > again.txt")], [{ text: "done" }]]));
    expect((await tenant.waitForRun(second.body.id, 60_000)).status).toBe("completed");
    expect(await readFile(path.join(workspace, "again.txt"), "utf8")).toBe("small\n");
    await expect(lstat(path.join(workspace, "node_modules/big/blob.bin"))).rejects.toThrow();
    expect(await restoredEvents(sessionId)).toEqual([
      expect.objectContaining({ reason: "missing", files: 1, filesNotRestored: ["node_modules/big/blob.bin"] }),
    ]);
  }, 120_000);

  it("W1: where nothing but Foya touches workspaces, a file damaged between two turns (changed and removed behind Foya's back) is repaired from the checkpoint before the next batch runs, and the run works on the right content", async () => {
    await useWorker({ FOYA_WORKSPACE_OUT_OF_BAND_CHANGES: "repair" });
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    const first = await turn(sessionId, [write("data.txt", "right\n"), write("other.txt", "kept\n")]);
    const before = await folderSnapshot(workspace);
    await writeFile(path.join(workspace, "data.txt"), "damaged\n");
    await rm(path.join(workspace, "other.txt"));
    await writeFile(path.join(workspace, "stray.txt"), "never written by a tool\n");
    await turn(sessionId, [bash("cat data.txt other.txt > seen.txt")]);
    expect(await readFile(path.join(workspace, "seen.txt"), "utf8")).toBe("right\nkept\n");
    expect((await folderSnapshot(workspace)).filter((line) => !line.includes("seen.txt"))).toEqual(before);
    const events = await env.query<{ data: { reason: string; checkpointSeq: number } }>(
      "select data from events where session_id = $1 and type = 'workspace_restored'",
      [sessionId],
    );
    expect(events.map((event) => event.data)).toEqual([
      expect.objectContaining({ reason: "damaged", checkpointSeq: (await checkpointOfRun(first)).seq }),
    ]);
    // Nothing of the damaged folder is left beside the workspace.
    expect((await readdir(path.dirname(workspace))).filter((name) => name.startsWith(path.basename(workspace)))).toEqual([
      path.basename(workspace),
    ]);
  }, 120_000);

  it("W1: a worker SIGKILLed with a checkpoint's rows written but not committed leaves no checkpoint; the next worker closes the batch with a correct one, never taking the batch's own files for damage", async () => {
    // Under `repair`, the strictest setting: the redelivered batch compares the workspace with the checkpoint.
    const repair = { FOYA_WORKSPACE_OUT_OF_BAND_CHANGES: "repair" };
    await useWorker(repair);
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const workspace = await env.workspaceOf(sessionId);
    await turn(sessionId, [write("one.txt", "one\n")]);
    await stopWorkers();
    const crashing = await startWorker({ ...repair, FOYA_FAILPOINTS: "worker.checkpoint_rows_written" });
    const started = await client.startRun(
      sessionId,
      script([[write("two.txt", "two\n"), bash("echo three > three.txt")], [{ text: "done" }]]),
    );
    expect((await crashing.exited).signal).toBe("SIGKILL");
    const runId = started.body.id as RunId;
    expect(await env.query("select id from workspace_checkpoints where run_id = $1", [runId])).toEqual([]);
    const afterCrash = await folderSnapshot(workspace);
    await useWorker(repair);
    expect((await client.waitForRun(runId, 60_000)).status).toBe("completed");
    const checkpoint = await checkpointOfRun(runId);
    // The redelivered batch found its own calls' files beside the first checkpoint: caught up (seq 2), never taken for damage.
    const ofRun = await env.query<{ seq: number; reason: string }>(
      "select seq, reason from workspace_checkpoints where run_id = $1 order by seq",
      [runId],
    );
    expect(ofRun).toEqual([
      { seq: 2, reason: "catch_up" },
      { seq: 3, reason: "batch" },
    ]);
    expect(checkpoint.seq).toBe(3);
    const rebuilt = path.join(scratch, "after-crash");
    await materialize(checkpoint.id, client.tenantId as TenantId, rebuilt);
    expect(await folderSnapshot(rebuilt)).toEqual(afterCrash);
    expect(afterCrash.map((line) => line.split(" ")[1])).toEqual(["one.txt", "three.txt", "two.txt"]);
    // Every call ran once: the crash came after their results were committed.
    const calls = await env.query<{ status: string }>("select status from tool_calls where run_id = $1", [runId]);
    expect(calls.map((call) => call.status).sort()).toEqual(["succeeded", "succeeded"]);
    await writeFile(path.join(scratch, "done"), "");
  }, 120_000);
});
