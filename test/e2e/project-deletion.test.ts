import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectTrashRoot } from "../../src/workspace/project-trash.js";
import { waitFor, type ApiClient } from "../helpers/api-client.js";
import { processGroup } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * Deleting a project with a large workspace (SPEC F4): the API marks it deleted and answers at
 * once; a worker removes the files in slices, off the API's path and without holding its own
 * event loop; a worker killed mid-way leaves the rest to the next one.
 */

/**
 * The bound the issue states for other requests during a removal (100 ms), taken for the
 * median; each single request gets 500 ms, generous for a 2-core host shared with other test
 * files. The synchronous removal this replaces held the API for seconds.
 */
const medianBoundMs = 100;
const eachBoundMs = 500;

let env: TestEnv;
let client: ApiClient;
/** The workspaces, and beside them a file a link points at: on tmpfs where the host has one, so 100,000 files are made in seconds. */
let base: string;
const processes = processGroup();

beforeAll(async () => {
  base = await mkdtemp(path.join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "foya-deletion-"));
  env = await createTestEnv({ FOYA_WORKSPACES_DIR: path.join(base, "workspaces") });
  client = await env.newTenant("tenant");
});
afterAll(async () => {
  await processes.killAll();
  await env?.close();
  if (base) await rm(base, { recursive: true, force: true });
});

/** `folders` × `files` empty files, a chain of `depth` nested folders, and a link pointing out of the tree; answers the entries. */
async function fill(root: string, shape: { folders: number; files: number; depth: number }, outside: string): Promise<number> {
  for (let folder = 0; folder < shape.folders; folder++) {
    const at = path.join(root, `d${folder}`);
    mkdirSync(at);
    for (let file = 0; file < shape.files; file++) closeSync(openSync(path.join(at, `f${file}`), "w"));
  }
  await mkdir(path.join(root, ...Array.from({ length: shape.depth }, () => "n")), { recursive: true });
  await symlink(outside, path.join(root, "d0", "out"));
  return entriesUnder(root);
}

async function entriesUnder(root: string): Promise<number> {
  const found = await execa("bash", ["-c", 'find "$1" | wc -l', "count", root], { reject: false });
  return Number(found.stdout.trim());
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

const exists = (where: string) =>
  stat(where).then(
    () => true,
    () => false,
  );

describe("deleting a project with a large workspace", () => {
  it("F4: the API answers at once and keeps answering other requests while a worker removes 100,000 entries in slices; the files are gone after", async () => {
    const doomed = await client.newSession();
    const kept = await client.newSession();
    const workspace = await env.workspaceOf(doomed.sessionId);
    const trash = projectTrashRoot(env.config.workspaces.dir, workspace);
    const outside = path.join(base, "outside.txt");
    await writeFile(outside, "outside\n");
    const entries = await fill(workspace, { folders: 100, files: 1000, depth: 300 }, outside);
    expect(entries).toBeGreaterThan(100_000);
    await mkdir(path.join(trash, "Trash", "files"), { recursive: true });
    await writeFile(path.join(trash, "Trash", "files", "old.txt"), "trashed\n");
    const keptWorkspace = await env.workspaceOf(kept.sessionId);
    await writeFile(path.join(keptWorkspace, "mine.txt"), "mine\n");
    // The worker of this process: its slices share the event loop with the API that is measured.
    const worker = await env.startWorker();

    const deleted = await timed(() => client.delete(`/v1/projects/${doomed.projectId}`));
    expect(deleted.value.status).toBe(204);
    expect(deleted.ms).toBeLessThan(eachBoundMs);
    // Deleted at once, for everything of the tenant's.
    expect((await client.get(`/v1/projects/${doomed.projectId}`)).status).toBe(404);
    expect((await client.post("/v1/sessions", { projectId: doomed.projectId })).status).toBe(404);
    expect((await client.startRun(doomed.sessionId, "hello")).status).toBe(404);

    // Other requests while the worker removes the tree: those answered after it claimed the removal and before the tree was gone.
    const claimed = async () =>
      (await env.query("select 1 from projects where id = $1 and removal_owner is not null", [doomed.projectId])).length === 1;
    const latencies: number[] = [];
    await waitFor(
      async () => {
        const during = await claimed();
        const answered = await timed(() => client.get(`/v1/projects/${kept.projectId}`));
        expect(answered.value.status).toBe(200);
        const left = await exists(workspace);
        if (during && left) latencies.push(answered.ms);
        return !left;
      },
      120_000,
      "the workspace to be removed",
    );
    expect(latencies.length).toBeGreaterThanOrEqual(5);
    const sorted = [...latencies].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] as number;
    expect(median, `latencies during the removal: ${sorted.map((ms) => ms.toFixed(0)).join(", ")}`).toBeLessThan(medianBoundMs);
    expect(sorted.at(-1), `latencies during the removal: ${sorted.map((ms) => ms.toFixed(0)).join(", ")}`).toBeLessThan(eachBoundMs);

    await waitFor(
      async () =>
        (await env.query("select 1 from projects where id = $1 and files_removed_at is not null", [doomed.projectId])).length === 1,
      20_000,
      "the removal to be recorded",
    );
    expect(await exists(trash)).toBe(false);
    expect(await readFile(outside, "utf8")).toBe("outside\n");
    expect(await readFile(path.join(keptWorkspace, "mine.txt"), "utf8")).toBe("mine\n");
    const metrics = await env.services.metrics.registry.getSingleMetricAsString("foya_deleted_projects_with_files");
    expect(metrics).toMatch(/^foya_deleted_projects_with_files(\{[^}]*\})? 0$/m);
    await worker.close();
  }, 240_000);

  it("F4: a worker killed in the middle of a removal leaves the rest to the next worker, which finishes it", async () => {
    const doomed = await client.newSession();
    const workspace = await env.workspaceOf(doomed.sessionId);
    const outside = path.join(base, "outside-2.txt");
    await writeFile(outside, "outside\n");
    const entries = await fill(workspace, { folders: 20, files: 1000, depth: 50 }, outside);
    // The only worker: killed at the end of its first slice, as a SIGKILL leaves it.
    const doomedWorker = await processes.start("worker", { ...env.env, FOYA_FAILPOINTS: "worker.project_removal_slice" });

    expect((await client.delete(`/v1/projects/${doomed.projectId}`)).status).toBe(204);
    expect((await doomedWorker.exited).signal).toBe("SIGKILL");
    const left = await entriesUnder(workspace);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(entries);
    const [claim] = await env.query<{ files_removed_at: Date | null; removal_owner: string | null }>(
      "select files_removed_at, removal_owner from projects where id = $1",
      [doomed.projectId],
    );
    expect(claim).toMatchObject({ files_removed_at: null, removal_owner: expect.stringContaining(`-${doomedWorker.pid}-`) });

    // Once the dead worker's claim lapses (the lease, 2 s here), a new worker resumes from what is left.
    await env.startWorker();
    await waitFor(async () => !(await exists(workspace)), 60_000, "the rest of the workspace to be removed");
    await waitFor(
      async () =>
        (await env.query("select 1 from projects where id = $1 and files_removed_at is not null", [doomed.projectId])).length === 1,
      20_000,
      "the removal to be recorded",
    );
    expect(await readFile(outside, "utf8")).toBe("outside\n");
  }, 120_000);
});
