import { eq } from "drizzle-orm";
import type { ApprovalPolicy } from "../core/policy.js";
import type { DbExecutor } from "../db/client.js";
import { tenants } from "../db/schema.js";

/** The operator's settings of a tenant as stored (SPEC S7, S8, X5), or undefined for no such tenant. */
export async function readTenantSettingsRow(
  db: DbExecutor,
  tenantId: string,
): Promise<Pick<typeof tenants.$inferSelect, "toolUidSlot" | "fullAccess" | "toolLimits" | "quotas"> | undefined> {
  const [row] = await db
    .select({ toolUidSlot: tenants.toolUidSlot, fullAccess: tenants.fullAccess, toolLimits: tenants.toolLimits, quotas: tenants.quotas })
    .from(tenants)
    .where(eq(tenants.id, tenantId));
  return row;
}

/** A tenant's approval policy (SPEC S2); undefined for no such tenant. */
export async function readTenantPolicy(db: DbExecutor, tenantId: string): Promise<{ policy: ApprovalPolicy } | undefined> {
  const [row] = await db.select({ policy: tenants.policy }).from(tenants).where(eq(tenants.id, tenantId));
  return row;
}

/** Replaces a tenant's approval policy (SPEC S2). */
export async function setTenantPolicy(db: DbExecutor, tenantId: string, policy: ApprovalPolicy): Promise<void> {
  await db.update(tenants).set({ policy }).where(eq(tenants.id, tenantId));
}
