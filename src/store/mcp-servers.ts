import { and, asc, eq, isNull, or } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { mcpServers } from "../db/schema.js";
import { type ProjectId, type TenantId, newId } from "../ids.js";
import type { McpTransportConfig } from "../core/mcp-transport.js";
import { repository } from "./repository.js";
import type { McpServerId } from "../ids.js";

/** MCP server configurations (SPEC M1) as the API reads and writes them and workers read them; every lookup is by tenant (D8). */

export type McpServerRow = typeof mcpServers.$inferSelect;

export interface McpServerInput {
  tenantId: TenantId;
  projectId: ProjectId | null;
  name: string;
  transport: McpTransportConfig;
  startupTimeoutMs: number | null;
  callTimeoutMs: number | null;
  deferTools: boolean | null;
}

/** Answers null when the name is taken in the same scope (tenant-wide, or the same project). */
async function createMcpServer(db: Database, input: McpServerInput): Promise<McpServerRow | null> {
  const [row] = await db
    .insert(mcpServers)
    .values({ id: newId("mcp"), ...input })
    .onConflictDoNothing()
    .returning();
  return row ?? null;
}

async function findMcpServer(db: Database, tenantId: TenantId, id: McpServerId): Promise<McpServerRow | null> {
  const [row] = await db
    .select()
    .from(mcpServers)
    .where(and(eq(mcpServers.id, id), eq(mcpServers.tenantId, tenantId)));
  return row ?? null;
}

/** The tenant's servers; with `projectId`, only those that project sees (its own and the tenant-wide ones). */
async function listMcpServers(db: Database, tenantId: TenantId, projectId?: ProjectId): Promise<McpServerRow[]> {
  const scope = projectId === undefined ? undefined : or(isNull(mcpServers.projectId), eq(mcpServers.projectId, projectId));
  return db
    .select()
    .from(mcpServers)
    .where(and(eq(mcpServers.tenantId, tenantId), scope))
    .orderBy(asc(mcpServers.createdAt), asc(mcpServers.id));
}

async function deleteMcpServer(db: Database, tenantId: TenantId, id: McpServerId): Promise<McpServerRow | null> {
  const [row] = await db
    .delete(mcpServers)
    .where(and(eq(mcpServers.id, id), eq(mcpServers.tenantId, tenantId)))
    .returning();
  return row ?? null;
}

/** The server named `name` that a project sees: its own first, else the tenant-wide one. */
async function resolveMcpServer(db: Database, tenantId: TenantId, projectId: ProjectId, name: string): Promise<McpServerRow | null> {
  const rows = await db
    .select()
    .from(mcpServers)
    .where(
      and(
        eq(mcpServers.tenantId, tenantId),
        eq(mcpServers.name, name),
        or(isNull(mcpServers.projectId), eq(mcpServers.projectId, projectId)),
      ),
    );
  return rows.find((row) => row.projectId === projectId) ?? rows.find((row) => row.projectId === null) ?? null;
}

/**
 * The server of exactly this scope and name (no fallback from a project to the tenant): how a
 * worker finds the server of an MCP request, by the tenant first, so a request never reaches
 * another tenant's server whatever else it names.
 */
async function findMcpServerInScope(
  db: Database,
  scope: { tenantId: TenantId; projectId: ProjectId | null },
  name: string,
): Promise<McpServerRow | null> {
  const [row] = await db
    .select()
    .from(mcpServers)
    .where(
      and(
        eq(mcpServers.tenantId, scope.tenantId),
        eq(mcpServers.name, name),
        scope.projectId === null ? isNull(mcpServers.projectId) : eq(mcpServers.projectId, scope.projectId),
      ),
    );
  return row ?? null;
}

/** `store.mcpServers`. */
export const mcpServersRepository = repository({
  db: { createMcpServer, findMcpServer, listMcpServers, deleteMcpServer, resolveMcpServer, findMcpServerInScope },
});
