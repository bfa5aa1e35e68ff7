import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultProcessLimits } from "../../src/core/process-limits.js";
import { createTenantSettingsCache } from "../../src/tenants/tenant-settings.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/** The test deployment: Full Access allowed (the test default), one limit set by the deployment. */
let allowed: TestEnv;
/** The same, with FOYA_ALLOW_FULL_ACCESS=false. */
let forbidden: TestEnv;

beforeAll(async () => {
  allowed = await createTestEnv({ FOYA_TOOL_CPU_SECONDS: "120" });
  await allowed.startWorker();
  forbidden = await createTestEnv({ FOYA_ALLOW_FULL_ACCESS: "false" });
});
afterAll(async () => {
  await allowed?.close();
  await forbidden?.close();
});

function tenantPath(client: ApiClient): string {
  if (!client.tenantId) throw new Error("a client made by newTenant knows its tenant");
  return `/v1/tenants/${client.tenantId}`;
}

async function newProject(client: ApiClient): Promise<string> {
  const project = await client.post<{ id: string }>("/v1/projects", { name: "grant" });
  expect(project.status).toBe(201);
  return project.body.id;
}

const deploymentMissing = /FOYA_ALLOW_FULL_ACCESS=true/;
const tenantMissing = /PATCH \/v1\/tenants\/\{id\} \{"fullAccess": true\}/;

describe("Full Access grant", () => {
  it("S8: Full Access refused without the operator grant (403 with a clear message)", async () => {
    // Deployment off, tenant flagged: the message names only the deployment setting.
    const flaggedButOff = await forbidden.newTenant("flagged", { fullAccess: true });
    const refusedByDeployment = await flaggedButOff.post("/v1/sessions", {
      projectId: await newProject(flaggedButOff),
      approvalMode: "full_access",
    });
    expect(refusedByDeployment.status).toBe(403);
    expect(refusedByDeployment.body.error.code).toBe("full_access_not_granted");
    expect(refusedByDeployment.body.error.message).toMatch(deploymentMissing);
    expect(refusedByDeployment.body.error.message).not.toMatch(tenantMissing);

    // Deployment on, tenant not flagged: the message names only the tenant grant.
    const ungranted = await allowed.newTenant("ungranted");
    const refusedByTenant = await ungranted.post("/v1/sessions", { projectId: await newProject(ungranted), approvalMode: "full_access" });
    expect(refusedByTenant.status).toBe(403);
    expect(refusedByTenant.body.error.code).toBe("full_access_not_granted");
    expect(refusedByTenant.body.error.message).toMatch(tenantMissing);
    expect(refusedByTenant.body.error.message).not.toMatch(deploymentMissing);

    // Neither: both are named.
    const neither = await forbidden.newTenant("neither");
    const refusedByBoth = await neither.post("/v1/sessions", { projectId: await newProject(neither), approvalMode: "full_access" });
    expect(refusedByBoth.status).toBe(403);
    expect(refusedByBoth.body.error.message).toMatch(deploymentMissing);
    expect(refusedByBoth.body.error.message).toMatch(tenantMissing);

    // Other modes need no grant; refused requests wrote no session.
    expect((await ungranted.newSession({ approvalMode: "auto" })).sessionId).toMatch(/^ses_/);
    expect(await forbidden.query("select id from sessions where approval_mode = 'full_access'")).toEqual([]);
    expect(await allowed.query("select id from sessions where approval_mode = 'full_access'")).toEqual([]);

    // Both: the session is created and a run starts and completes.
    const granted = await allowed.newTenant("granted", { fullAccess: true });
    const { sessionId } = await granted.newSession({ approvalMode: "full_access" });
    const run = await granted.startRun(sessionId, script([[{ text: "granted" }]]));
    expect(run.status).toBe(202);
    expect((await granted.waitForRun(run.body.id)).status).toBe("completed");
  });

  it("S8: a revoked grant stops new runs of an existing Full Access session, and a new grant lets them start again", async () => {
    const tenant = await allowed.newTenant("revoked", { fullAccess: true });
    const { sessionId } = await tenant.newSession({ approvalMode: "full_access" });
    expect((await allowed.admin.patch(tenantPath(tenant), { fullAccess: false })).body.fullAccess).toBe(false);
    const refused = await tenant.startRun(sessionId, script([[{ text: "no" }]]));
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("full_access_not_granted");
    expect(refused.body.error.message).toMatch(tenantMissing);
    expect(await allowed.query("select id from runs where session_id = $1", [sessionId])).toEqual([]);
    // The session itself stays readable, and other sessions of the tenant are untouched.
    expect((await tenant.get(`/v1/sessions/${sessionId}`)).body.approvalMode).toBe("full_access");
    const { sessionId: autoSession } = await tenant.newSession({ approvalMode: "auto" });
    expect((await tenant.startRun(autoSession, script([[{ text: "auto" }]]))).status).toBe(202);

    await allowed.admin.patch(tenantPath(tenant), { fullAccess: true });
    const again = await tenant.startRun(sessionId, script([[{ text: "yes" }]]));
    expect(again.status).toBe(202);
    expect((await tenant.waitForRun(again.body.id)).status).toBe("completed");
  });

  it("S8: turning the deployment setting off stops runs of Full Access sessions made while it was on", async () => {
    const tenant = await forbidden.newTenant("was-on", { fullAccess: true });
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    // As if the session was created before the operator set FOYA_ALLOW_FULL_ACCESS=false.
    await forbidden.query("update sessions set approval_mode = 'full_access' where id = $1", [sessionId]);
    const refused = await tenant.startRun(sessionId, "hello");
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("full_access_not_granted");
    expect(refused.body.error.message).toMatch(deploymentMissing);
  });

  it("S8: only the admin token reads or changes a tenant; another tenant's key is refused and an unknown id answers 404", async () => {
    const owner = await allowed.newTenant("owner");
    const neighbour = await allowed.newTenant("neighbour", { fullAccess: true });
    for (const caller of [owner, neighbour]) {
      for (const target of [owner, neighbour]) {
        expect((await caller.get(tenantPath(target))).status).toBe(401);
        expect((await caller.patch(tenantPath(target), { fullAccess: true })).status).toBe(401);
      }
      expect((await caller.get("/v1/tenants/ten_nope")).status).toBe(401);
    }
    expect((await allowed.admin.get(tenantPath(owner))).body.fullAccess).toBe(false);

    for (const response of [
      await allowed.admin.get("/v1/tenants/ten_nope"),
      await allowed.admin.patch("/v1/tenants/ten_nope", { fullAccess: true }),
    ]) {
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe("not_found");
    }
    // A granted tenant reaches no other tenant's session through its grant.
    const { sessionId } = await owner.newSession({ approvalMode: "auto" });
    expect((await neighbour.startRun(sessionId, "hijack")).status).toBe(404);
  });

  it("S7: limit overrides are validated, merged over the deployment's limits, and cleared with null", async () => {
    const tenant = await allowed.newTenant("limits");
    const path = tenantPath(tenant);
    const deployment = { ...defaultProcessLimits, cpuSeconds: 120 };
    const fresh = await allowed.admin.get(path);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ id: tenant.tenantId, name: "limits", fullAccess: false, limits: {}, effectiveLimits: deployment });

    const invalid: unknown[] = [
      { limits: { memoryBytes: 0 } },
      { limits: { processes: -1 } },
      { limits: { cpuSeconds: 1.5 } },
      { limits: { wallSeconds: "30" } },
      { limits: { tmpBytes: 2 ** 53 } },
      { limits: { swapBytes: 1 } },
      { limits: [] },
      { fullAccess: "yes" },
      { fullAccess: true, owner: "me" },
    ];
    for (const body of invalid) {
      const response = await allowed.admin.patch(path, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.code).toBe("bad_request");
    }
    expect((await allowed.admin.get(path)).body).toMatchObject({ fullAccess: false, limits: {} });

    const memory = await allowed.admin.patch(path, { limits: { memoryBytes: 1024 ** 3 } });
    expect(memory.status).toBe(200);
    expect(memory.body.limits).toEqual({ memoryBytes: 1024 ** 3 });
    expect(memory.body.effectiveLimits).toEqual({ ...deployment, memoryBytes: 1024 ** 3 });

    const both = await allowed.admin.patch(path, { limits: { processes: 64, cpuSeconds: 10 } });
    expect(both.body.limits).toEqual({ memoryBytes: 1024 ** 3, processes: 64, cpuSeconds: 10 });
    expect(both.body.effectiveLimits).toEqual({ ...deployment, memoryBytes: 1024 ** 3, processes: 64, cpuSeconds: 10 });

    const removedOne = await allowed.admin.patch(path, { limits: { memoryBytes: null } });
    expect(removedOne.body.limits).toEqual({ processes: 64, cpuSeconds: 10 });
    // The grant is changed on its own; the overrides stay.
    const grantOnly = await allowed.admin.patch(path, { fullAccess: true });
    expect(grantOnly.body).toMatchObject({ fullAccess: true, limits: { processes: 64, cpuSeconds: 10 } });

    const cleared = await allowed.admin.patch(path, { limits: null });
    expect(cleared.body).toMatchObject({ fullAccess: true, limits: {}, effectiveLimits: deployment });
    expect((await allowed.admin.patch(path, {})).body).toEqual(cleared.body);
    expect(await allowed.query("select tool_limits from tenants where id = $1", [tenant.tenantId])).toEqual([{ tool_limits: {} }]);
  });

  it("S7: each tenant has its own tool uid, above the uid base, that never changes", async () => {
    const first = await allowed.newTenant("first");
    const second = await allowed.newTenant("second");
    const uidOf = async (client: ApiClient): Promise<number> => (await allowed.admin.get(tenantPath(client))).body.toolUid;
    const [firstUid, secondUid] = [await uidOf(first), await uidOf(second)];
    expect(firstUid).toBeGreaterThan(allowed.config.sandbox.toolUidBase);
    expect(secondUid).toBeGreaterThan(allowed.config.sandbox.toolUidBase);
    expect(secondUid).not.toBe(firstUid);
    await allowed.admin.patch(tenantPath(first), { fullAccess: true, limits: { processes: 10 } });
    expect(await uidOf(first)).toBe(firstUid);
    expect(await uidOf(second)).toBe(secondUid);
    const slots = await allowed.query<{ tool_uid_slot: number }>("select tool_uid_slot from tenants where id = $1", [first.tenantId]);
    expect(firstUid).toBe(allowed.config.sandbox.toolUidBase + slots[0]!.tool_uid_slot);
    // The database assigns slots; nobody writes one.
    await expect(allowed.query("update tenants set tool_uid_slot = 1 where id = $1", [second.tenantId])).rejects.toThrow(/tool_uid_slot/);
  });

  it("S8: a process's cached tenant settings follow an operator's change within their TTL", async () => {
    const tenant = await allowed.newTenant("cached");
    const cache = createTenantSettingsCache(allowed.services.store, 200);
    const before = await cache.get(tenant.tenantId!);
    expect(before).toMatchObject({ fullAccess: false, limits: {} });
    expect(await cache.get(tenant.tenantId!)).toBe(before);
    await allowed.admin.patch(tenantPath(tenant), { fullAccess: true, limits: { wallSeconds: 30 } });
    await waitFor(async () => (await cache.get(tenant.tenantId!)).fullAccess, 2_000, "the cache to see the grant");
    expect(await cache.get(tenant.tenantId!)).toMatchObject({ fullAccess: true, limits: { wallSeconds: 30 } });
    await expect(cache.get("ten_nope")).rejects.toMatchObject({ code: "not_found" });
  });

  it("S8: the tenant routes are in the OpenAPI document", async () => {
    const document = (await (await allowed.app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(document.paths["/v1/tenants/{id}"] ?? {})).toEqual(expect.arrayContaining(["get", "patch"]));
  });
});
