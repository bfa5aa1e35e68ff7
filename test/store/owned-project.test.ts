import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalPolicy } from "../../src/core/policy.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/**
 * `store.projects`: every read and update by id goes through one condition (SPEC D8), so another
 * tenant's id and a deleted project (F4) look the same as a missing one.
 */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const policy: ApprovalPolicy = { rules: { ask: ["bash(*)"] } };

describe("store.projects", () => {
  it("D8: another tenant's id finds no project, no workspace, and deletes or changes nothing", async () => {
    const mine = await db.newSession();
    const other = await db.newSession();
    expect(await db.store.projects.findOwnedProject(mine.tenantId, mine.projectId)).toMatchObject({ id: mine.projectId, deletedAt: null });
    expect(await db.store.projects.ownedProjectWorkspace(mine.tenantId, mine.projectId)).toBe("/nonexistent");
    expect(await db.store.projects.findOwnedProject(other.tenantId, mine.projectId)).toBeUndefined();
    expect(await db.store.projects.ownedProjectWorkspace(other.tenantId, mine.projectId)).toBeUndefined();
    expect(await db.store.projects.markProjectDeleted(other.tenantId, mine.projectId)).toBeUndefined();
    let asked = false;
    const set = await db.store.projects.setProjectPolicyAdmitted(other.tenantId, mine.projectId, policy, async () => {
      asked = true;
      return null;
    });
    expect(set).toBeUndefined();
    expect(asked).toBe(false);
    expect(await db.store.projects.findOwnedProject(mine.tenantId, mine.projectId)).toMatchObject({ deletedAt: null, policy: {} });
  });

  it("F4: a deleted project is gone to every read and update, and deleting it again answers nothing", async () => {
    const { tenantId, projectId } = await db.newSession();
    const deleted = await db.store.projects.markProjectDeleted(tenantId, projectId);
    expect(deleted?.deletedAt).toBeInstanceOf(Date);
    expect(await db.store.projects.markProjectDeleted(tenantId, projectId)).toBeUndefined();
    expect(await db.store.projects.findOwnedProject(tenantId, projectId)).toBeUndefined();
    expect(await db.store.projects.ownedProjectWorkspace(tenantId, projectId)).toBeUndefined();
    expect(await db.store.projects.setProjectPolicyAdmitted(tenantId, projectId, policy, async () => null)).toBeUndefined();
  });

  it("S2, S9: a project policy is judged beside its tenant's and stored only when admitted", async () => {
    const { tenantId, projectId } = await db.newSession();
    const tenantPolicy: ApprovalPolicy = { rules: { deny: ["bash(rm *)"] } };
    await db.store.tenants.setTenantPolicyAdmitted(tenantId, tenantPolicy, async () => null);
    const seen: ApprovalPolicy[] = [];
    const refused = await db.store.projects.setProjectPolicyAdmitted(tenantId, projectId, policy, async (judged) => {
      seen.push(judged);
      return "conflicts";
    });
    expect(refused).toBe("conflicts");
    expect(seen).toEqual([tenantPolicy]);
    expect((await db.store.projects.findOwnedProject(tenantId, projectId))?.policy).toEqual({});
    expect(await db.store.projects.setProjectPolicyAdmitted(tenantId, projectId, policy, async () => null)).toBeNull();
    expect((await db.store.projects.findOwnedProject(tenantId, projectId))?.policy).toEqual(policy);
  });
});
