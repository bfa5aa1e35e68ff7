import { and, eq, isNull, sql } from "drizzle-orm";
import type { PgUpdateSetSource } from "drizzle-orm/pg-core";
import type { ApprovalPolicy } from "../core/policy.js";
import type { Database, DbExecutor } from "../db/client.js";
import { apiKeys, projects, tenants } from "../db/schema.js";
import { type TenantId, newId } from "../ids.js";
import { repository } from "./repository.js";

/** The operator's settings of a tenant as stored (SPEC S7, S8, X5), or undefined for no such tenant. */
async function readTenantSettingsRow(
  db: DbExecutor,
  tenantId: TenantId,
): Promise<Pick<typeof tenants.$inferSelect, "toolUidSlot" | "fullAccess" | "toolLimits" | "quotas"> | undefined> {
  const [row] = await db
    .select({ toolUidSlot: tenants.toolUidSlot, fullAccess: tenants.fullAccess, toolLimits: tenants.toolLimits, quotas: tenants.quotas })
    .from(tenants)
    .where(eq(tenants.id, tenantId));
  return row;
}

/** A tenant's approval policy (SPEC S2); undefined for no such tenant. */
async function readTenantPolicy(db: DbExecutor, tenantId: TenantId): Promise<{ policy: ApprovalPolicy } | undefined> {
  const [row] = await db.select({ policy: tenants.policy }).from(tenants).where(eq(tenants.id, tenantId));
  return row;
}

/**
 * Replaces a tenant's approval policy when `admit` accepts it beside the policy of each of its
 * live projects (SPEC S2, S9: a tenant's and a project's policies are judged together). The
 * tenant's row is locked first, as `setProjectPolicyAdmitted` does, so two policies set at the
 * same time are checked against each other. Answers why `admit` refused, or null once stored.
 */
async function setTenantPolicyAdmitted(
  db: Database,
  tenantId: TenantId,
  policy: ApprovalPolicy,
  admit: (projectPolicies: ApprovalPolicy[]) => Promise<string | null>,
): Promise<string | null> {
  return db.transaction(async (tx) => {
    await tx.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, tenantId)).for("update");
    const rows = await tx
      .select({ policy: projects.policy })
      .from(projects)
      .where(and(eq(projects.tenantId, tenantId), isNull(projects.deletedAt), sql`${projects.policy} ? 'rules'`));
    const refused = await admit(rows.map((row) => row.policy));
    if (refused === null) await tx.update(tenants).set({ policy }).where(eq(tenants.id, tenantId));
    return refused;
  });
}

export type TenantRow = typeof tenants.$inferSelect;

/** Creates a tenant and its first API key (stored hashed, SPEC D8) in one transaction; answers the tenant. */
async function insertTenantWithKey(db: Database, name: string, key: { hash: string; prefix: string }): Promise<TenantRow> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(tenants)
      .values({ id: newId("ten"), name })
      .returning();
    if (!row) throw new Error("tenant insert returned nothing");
    await tx.insert(apiKeys).values({ id: newId("key"), tenantId: row.id, keyHash: key.hash, prefix: key.prefix, name: "initial" });
    return row;
  });
}

/** A tenant by id (the admin API); undefined for none. */
async function findTenant(db: DbExecutor, id: TenantId): Promise<TenantRow | undefined> {
  const [tenant] = await db.select().from(tenants).where(eq(tenants.id, id));
  return tenant;
}

/**
 * The operator's change of a tenant's settings (SPEC S7, S8, X5): Full Access, and limit and quota
 * overrides, where null clears them and an object is merged in one statement (a null value
 * overwrites its key, and stripping nulls removes it). Nothing to change reads the tenant.
 * Undefined for no such tenant.
 */
async function updateTenantSettings(
  db: DbExecutor,
  id: TenantId,
  body: { fullAccess?: boolean | undefined; limits?: object | null | undefined; quotas?: object | null | undefined },
): Promise<TenantRow | undefined> {
  const changes: PgUpdateSetSource<typeof tenants> = {};
  if (body.fullAccess !== undefined) changes.fullAccess = body.fullAccess;
  if (body.limits === null) changes.toolLimits = {};
  else if (body.limits !== undefined)
    changes.toolLimits = sql`jsonb_strip_nulls(${tenants.toolLimits} || ${JSON.stringify(body.limits)}::jsonb)`;
  if (body.quotas === null) changes.quotas = {};
  else if (body.quotas !== undefined) changes.quotas = sql`jsonb_strip_nulls(${tenants.quotas} || ${JSON.stringify(body.quotas)}::jsonb)`;
  const [tenant] =
    Object.keys(changes).length === 0
      ? await db.select().from(tenants).where(eq(tenants.id, id))
      : await db.update(tenants).set(changes).where(eq(tenants.id, id)).returning();
  return tenant;
}

/** `store.tenants`. */
export const tenantsRepository = repository({
  db: { readTenantSettingsRow, readTenantPolicy, setTenantPolicyAdmitted, insertTenantWithKey, findTenant, updateTenantSettings },
});
