import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalPolicy } from "../../src/core/policy.js";
import { newId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** `store.tenants`: a tenant with its first key, the operator's settings, and its policy's admission (SPEC S2). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const policy: ApprovalPolicy = { rules: { deny: ["bash(rm *)"] } };

describe("store.tenants", () => {
  it("D8: a tenant is created with its first API key, stored by hash only", async () => {
    const hash = randomBytes(16).toString("hex");
    const tenant = await db.store.tenants.insertTenantWithKey("acme", { hash, prefix: "foya_ab" });
    expect(await db.store.tenants.findTenant(tenant.id)).toMatchObject({ id: tenant.id, name: "acme", fullAccess: false });
    const keys = await db.query("select key_hash, prefix, name from api_keys where tenant_id = $1", [tenant.id]);
    expect(keys).toEqual([{ key_hash: hash, prefix: "foya_ab", name: "initial" }]);
    expect(await db.store.apiKeys.liveApiKeyByHash(hash)).toMatchObject({ tenantId: tenant.id });
  });

  it("S8, X5: settings merge limits and quotas, a null value removes its key, null clears, and nothing to change reads", async () => {
    const { tenantId } = await db.newSession();
    const updated = await db.store.tenants.updateTenantSettings(tenantId, {
      fullAccess: true,
      quotas: { activeRuns: 3, queuedRuns: 1000 },
      limits: { memoryBytes: 1024 },
    });
    expect(updated).toMatchObject({ fullAccess: true, quotas: { activeRuns: 3, queuedRuns: 1000 }, toolLimits: { memoryBytes: 1024 } });
    const merged = await db.store.tenants.updateTenantSettings(tenantId, { quotas: { activeRuns: null, queuedRuns: 5 } });
    expect(merged?.quotas).toEqual({ queuedRuns: 5 });
    expect(merged?.toolLimits).toEqual({ memoryBytes: 1024 });
    const cleared = await db.store.tenants.updateTenantSettings(tenantId, { limits: null });
    expect(cleared).toMatchObject({ toolLimits: {}, quotas: { queuedRuns: 5 }, fullAccess: true });
    expect(await db.store.tenants.updateTenantSettings(tenantId, {})).toEqual(cleared);
    expect(await db.store.tenants.readTenantSettingsRow(tenantId)).toEqual({
      toolUidSlot: cleared?.toolUidSlot,
      fullAccess: true,
      toolLimits: {},
      quotas: { queuedRuns: 5 },
    });
  });

  it("D8: an unknown tenant id reads nothing and updates nothing", async () => {
    expect(await db.store.tenants.findTenant("ten_missing")).toBeUndefined();
    expect(await db.store.tenants.readTenantSettingsRow("ten_missing")).toBeUndefined();
    expect(await db.store.tenants.readTenantPolicy("ten_missing")).toBeUndefined();
    expect(await db.store.tenants.updateTenantSettings("ten_missing", { fullAccess: true })).toBeUndefined();
    expect(await db.store.tenants.updateTenantSettings("ten_missing", {})).toBeUndefined();
  });

  it("S2, S9: a tenant policy is judged beside its live projects' rules and stored only when admitted", async () => {
    const { tenantId, projectId } = await db.newSession();
    const bare = await db.store.projects.insertProject({ id: newId("prj"), tenantId, name: "bare", workspacePath: "/nowhere" });
    const gone = await db.store.projects.insertProject({ id: newId("prj"), tenantId, name: "gone", workspacePath: "/nowhere" });
    if (!bare || !gone) throw new Error("project insert returned nothing");
    const projectRules: ApprovalPolicy = { rules: { ask: ["write(**)"] } };
    expect(await db.store.projects.setProjectPolicyAdmitted(tenantId, projectId, projectRules, async () => null)).toBeNull();
    expect(await db.store.projects.setProjectPolicyAdmitted(tenantId, gone.id, { rules: { allow: ["*"] } }, async () => null)).toBeNull();
    await db.store.projects.markProjectDeleted(tenantId, gone.id);
    const seen: ApprovalPolicy[][] = [];
    const refused = await db.store.tenants.setTenantPolicyAdmitted(tenantId, policy, async (projectPolicies) => {
      seen.push(projectPolicies);
      return "conflicts";
    });
    expect(refused).toBe("conflicts");
    expect(seen).toEqual([[projectRules]]);
    expect(await db.store.tenants.readTenantPolicy(tenantId)).toEqual({ policy: {} });
    expect(await db.store.tenants.setTenantPolicyAdmitted(tenantId, policy, async () => null)).toBeNull();
    expect(await db.store.tenants.readTenantPolicy(tenantId)).toEqual({ policy });
  });
});
