import { and, eq, isNull, sql, type SQL } from "drizzle-orm";
import type { ApprovalPolicy } from "../core/policy.js";
import type { Database, DbExecutor } from "../db/client.js";
import { projects, tenants } from "../db/schema.js";
import { repository } from "./repository.js";
import type { CheckpointId, ProjectId, TenantId } from "../ids.js";

/**
 * The one condition that makes a project this tenant's (SPEC D8): its id, its tenant, and not
 * deleted. Every read and update of a project by id goes through it, so another tenant's id and a
 * deleted project look the same as a missing one.
 */
function ownedProject(tenantId: TenantId, projectId: ProjectId): SQL {
  return and(eq(projects.id, projectId), eq(projects.tenantId, tenantId), isNull(projects.deletedAt)) as SQL;
}

/** The workspace folder of this tenant's project, or undefined for a missing or deleted one. */
async function ownedProjectWorkspace(db: DbExecutor, tenantId: TenantId, projectId: ProjectId): Promise<string | undefined> {
  const [project] = await db.select({ workspacePath: projects.workspacePath }).from(projects).where(ownedProject(tenantId, projectId));
  return project?.workspacePath;
}

/** Marks this tenant's project deleted (SPEC F4) and answers its row; undefined for a missing or deleted one. */
async function markProjectDeleted(
  db: DbExecutor,
  tenantId: TenantId,
  projectId: ProjectId,
): Promise<typeof projects.$inferSelect | undefined> {
  const [project] = await db.update(projects).set({ deletedAt: sql`now()` }).where(ownedProject(tenantId, projectId)).returning();
  return project;
}

/** This tenant's project by id (SPEC D8); undefined for a missing or deleted one. */
async function findOwnedProject(db: DbExecutor, tenantId: TenantId, id: ProjectId): Promise<typeof projects.$inferSelect | undefined> {
  const [project] = await db.select().from(projects).where(ownedProject(tenantId, id));
  return project;
}

/** Inserts a new project of a tenant (SPEC D8: every row belongs to a tenant) and answers its row. */
async function insertProject(
  db: DbExecutor,
  values: { id: ProjectId; tenantId: TenantId; name: string; workspacePath: string; policy?: ApprovalPolicy },
): Promise<typeof projects.$inferSelect | undefined> {
  const [project] = await db.insert(projects).values(values).returning();
  return project;
}

/**
 * Replaces this tenant's project's approval policy (SPEC S2, D8) when `admit` accepts it beside
 * the tenant's policy (S9: the two are judged together), under the tenant's row lock that
 * `setTenantPolicyAdmitted` takes too. Answers why `admit` refused, null once stored, or
 * undefined for a missing or deleted project.
 */
async function setProjectPolicyAdmitted(
  db: Database,
  tenantId: TenantId,
  projectId: ProjectId,
  policy: ApprovalPolicy,
  admit: (tenantPolicy: ApprovalPolicy) => Promise<string | null>,
): Promise<string | null | undefined> {
  return db.transaction(async (tx) => {
    const [tenant] = await tx.select({ policy: tenants.policy }).from(tenants).where(eq(tenants.id, tenantId)).for("update");
    const [project] = await tx.select({ id: projects.id }).from(projects).where(ownedProject(tenantId, projectId));
    if (!tenant || !project) return undefined;
    const refused = await admit(tenant.policy);
    if (refused === null) await tx.update(projects).set({ policy }).where(ownedProject(tenantId, projectId));
    return refused;
  });
}

/** `store.projects`. */
/** Orders the project's folder rebuilt from this checkpoint before its next batch (SPEC W2: a rewind, a fork). */
async function orderWorkspaceReset(db: DbExecutor, tenantId: TenantId, projectId: ProjectId, checkpointId: CheckpointId): Promise<void> {
  await db.update(projects).set({ workspaceResetTo: checkpointId }).where(ownedProject(tenantId, projectId));
}

/** Clears the order once carried out; an order given since (another rewind) stays. */
async function clearWorkspaceReset(db: DbExecutor, tenantId: TenantId, projectId: ProjectId, checkpointId: CheckpointId): Promise<void> {
  await db
    .update(projects)
    .set({ workspaceResetTo: null })
    .where(and(eq(projects.tenantId, tenantId), eq(projects.id, projectId), eq(projects.workspaceResetTo, checkpointId)));
}

export const projectsRepository = repository({
  db: {
    ownedProjectWorkspace,
    markProjectDeleted,
    findOwnedProject,
    insertProject,
    setProjectPolicyAdmitted,
    orderWorkspaceReset,
    clearWorkspaceReset,
  },
});
