import { eq } from "drizzle-orm";
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
