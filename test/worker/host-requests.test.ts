import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostIdOf } from "../../src/config.js";
import type { HostRequestJobData } from "../../src/hosts/host-request.js";
import { newId, type ProjectId, type TenantId } from "../../src/ids.js";
import { cleanHostCopies } from "../../src/worker/host-copies-cleanup.js";
import { serveHostRequest } from "../../src/worker/serve-host-request.js";
import { claimHostCopy, hostCopies, hostWorkspacePath } from "../../src/workspace/host-copies.js";
import { type ApiClient, waitFor } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * The host's side of the API's requests on workspaces (SPEC W3): a request routed by an old
 * placement is answered `moved`, never served on a stale copy; one naming another tenant's project
 * touches nothing; and a host's look at its copies removes those of deleted projects and of
 * projects placed elsewhere, and keeps its current ones.
 */
let env: TestEnv;
let client: ApiClient;
let hostId: string;

beforeAll(async () => {
  env = await createTestEnv();
  await env.startWorker();
  client = await env.newTenant("owner");
  hostId = hostIdOf(env.config);
  // The worker looks at its host's copies with its first sweep, then once a minute: once a copy of no
  // known project is gone, the looks this file makes itself are the only ones while it runs (a
  // background look that came between a test's set-up and its own look took the copies first, once).
  const unknown = { tenantId: newId("ten"), projectId: newId("prj") };
  await claimHostCopy(env.config.workspaces.dir, unknown, 1);
  await waitFor(
    async () => !(await hostCopies(env.config.workspaces.dir)).some((copy) => copy.projectId === unknown.projectId),
    30_000,
    "the worker's first look at its copies",
  );
});
afterAll(async () => env?.close());

/** A project of the tenant placed on this host (its first placement), with a file in its copy. */
async function placedProject(): Promise<{ tenantId: TenantId; projectId: ProjectId; epoch: number; folder: string }> {
  const { projectId } = await client.newSession();
  const tenantId = client.tenantId as TenantId;
  const placement = await env.services.store.placements.placeProject({ projectId }, env.config.workers.livenessTimeoutMs);
  if (!placement) throw new Error("no live host");
  await claimHostCopy(env.config.workspaces.dir, { tenantId, projectId }, placement.epoch);
  const folder = hostWorkspacePath(env.config.workspaces.dir, { tenantId, projectId });
  await mkdir(folder, { recursive: true });
  await writeFile(path.join(folder, "kept.txt"), "kept\n");
  return { tenantId, projectId, epoch: placement.epoch, folder };
}

function request(project: { tenantId: TenantId; projectId: ProjectId }, epoch: number): HostRequestJobData {
  return {
    tenantId: project.tenantId,
    projectId: project.projectId,
    placement: { hostId, epoch },
    request: { operation: "list-trash", limit: 10, after: null },
    deadline: Date.now() + 10_000,
    replyTo: "test",
  };
}

const serve = (data: HostRequestJobData) =>
  serveHostRequest(env.services, { hostId, jobId: "test-job" }, data, new AbortController().signal);

describe("host requests", () => {
  it("W3: a request routed by an older placement, or to another host, is answered moved; the current one is served", async () => {
    const project = await placedProject();
    expect(await serve(request(project, project.epoch))).toEqual({ ok: true, value: { entries: [], next: null } });
    expect(await serve(request(project, project.epoch + 1))).toEqual({ moved: true });
    expect(
      await serveHostRequest(
        env.services,
        { hostId: "another-host", jobId: "j" },
        request(project, project.epoch),
        AbortSignal.timeout(5_000),
      ),
    ).toEqual({
      moved: true,
    });
    expect(existsSync(path.join(project.folder, "kept.txt"))).toBe(true);
  });

  it("W3, D8: a request naming another tenant's project is refused as not found and makes no copy for that tenant", async () => {
    const project = await placedProject();
    const other = (await env.newTenant("other")).tenantId as TenantId;
    const forged = request({ tenantId: other, projectId: project.projectId }, project.epoch);
    expect(await serve(forged)).toMatchObject({ ok: false, code: "not_found" });
    const copies = await hostCopies(env.config.workspaces.dir);
    expect(copies.filter((copy) => copy.tenantId === other)).toEqual([]);
    expect(existsSync(hostWorkspacePath(env.config.workspaces.dir, { tenantId: other, projectId: project.projectId }))).toBe(false);
  });

  it("W3, F4: a host's look at its copies removes a deleted project's (with its trash) and a stale one, and keeps the current one", async () => {
    const current = await placedProject();
    const deleted = await placedProject();
    const moved = await placedProject();
    // Deleted while placed on another live host (whose removal claims it there, not this one's); moved to another host.
    await env.services.store.workers.renewWorker({ id: "elsewhere-worker", host: "elsewhere", pid: 1, jobs: {}, commands: 0 });
    await env.query("update project_placements set host_id = 'elsewhere', epoch = epoch + 1 where project_id = any($1)", [
      [deleted.projectId, moved.projectId],
    ]);
    expect((await client.delete(`/v1/projects/${deleted.projectId}`)).status).toBe(204);
    const unknown = { tenantId: current.tenantId, projectId: newId("prj") };
    await claimHostCopy(env.config.workspaces.dir, unknown, 1);
    const cleaned = await cleanHostCopies(env.services, hostId);
    expect(cleaned).toEqual({ deleted: 2, stale: 1 });
    expect(existsSync(path.join(current.folder, "kept.txt"))).toBe(true);
    expect(existsSync(deleted.folder)).toBe(false);
    expect(existsSync(moved.folder)).toBe(false);
    const left = (await hostCopies(env.config.workspaces.dir)).map((copy) => copy.projectId);
    expect(left).toContain(current.projectId);
    expect(left).not.toContain(deleted.projectId);
    expect(left).not.toContain(moved.projectId);
    expect(await cleanHostCopies(env.services, hostId)).toEqual({ deleted: 0, stale: 0 });
  });
});
