import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { McpServerInput } from "../../src/store/mcp-servers.js";
import { newId, type ProjectId, type TenantId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/** `store.mcpServers`: server configurations (SPEC M1), unique by name per scope, every lookup by tenant (D8). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const server = (tenantId: TenantId, projectId: ProjectId | null, name: string, command = "echo"): McpServerInput => ({
  tenantId,
  projectId,
  name,
  transport: { kind: "stdio", command, args: [], env: {} },
  startupTimeoutMs: null,
  callTimeoutMs: null,
  deferTools: null,
});

async function created(input: McpServerInput) {
  const row = await db.store.mcpServers.createMcpServer(input);
  if (!row) throw new Error("mcp server insert refused");
  return row;
}

describe("store.mcpServers", () => {
  it("M1: a name is taken once per scope: tenant-wide, or per project; a project may reuse a tenant-wide name", async () => {
    const { tenantId, projectId } = await db.newSession();
    await created(server(tenantId, null, "fs"));
    expect(await db.store.mcpServers.createMcpServer(server(tenantId, null, "fs"))).toBeNull();
    await created(server(tenantId, projectId, "fs"));
    expect(await db.store.mcpServers.createMcpServer(server(tenantId, projectId, "fs"))).toBeNull();
    const other = await db.newSession();
    await created(server(other.tenantId, null, "fs"));
  });

  it("D8: another tenant's id finds, lists, resolves and deletes nothing", async () => {
    const mine = await db.newSession();
    const other = await db.newSession();
    const row = await created(server(mine.tenantId, null, "git"));
    expect(await db.store.mcpServers.findMcpServer(mine.tenantId, row.id)).toMatchObject({ id: row.id, name: "git" });
    expect(await db.store.mcpServers.findMcpServer(other.tenantId, row.id)).toBeNull();
    expect(await db.store.mcpServers.listMcpServers(other.tenantId)).toEqual([]);
    expect(await db.store.mcpServers.resolveMcpServer(other.tenantId, other.projectId, "git")).toBeNull();
    expect(await db.store.mcpServers.findMcpServerInScope({ tenantId: other.tenantId, projectId: null }, "git")).toBeNull();
    expect(await db.store.mcpServers.deleteMcpServer(other.tenantId, row.id)).toBeNull();
    expect(await db.store.mcpServers.deleteMcpServer(mine.tenantId, row.id)).toMatchObject({ id: row.id });
    expect(await db.store.mcpServers.findMcpServer(mine.tenantId, row.id)).toBeNull();
  });

  it("M1: a project sees its own server before the tenant-wide one of the same name, and never another project's", async () => {
    const { tenantId, projectId } = await db.newSession();
    const sibling = await db.store.projects.insertProject({ id: newId("prj"), tenantId, name: "q", workspacePath: "/nowhere" });
    if (!sibling) throw new Error("project insert returned nothing");
    const wide = await created(server(tenantId, null, "fs", "wide"));
    const own = await created(server(tenantId, projectId, "fs", "own"));
    const theirs = await created(server(tenantId, sibling.id, "only-theirs"));
    expect((await db.store.mcpServers.resolveMcpServer(tenantId, projectId, "fs"))?.id).toBe(own.id);
    expect((await db.store.mcpServers.resolveMcpServer(tenantId, sibling.id, "fs"))?.id).toBe(wide.id);
    expect(await db.store.mcpServers.resolveMcpServer(tenantId, projectId, "only-theirs")).toBeNull();
    expect((await db.store.mcpServers.listMcpServers(tenantId, projectId)).map((row) => row.id)).toEqual([wide.id, own.id]);
    expect((await db.store.mcpServers.listMcpServers(tenantId)).map((row) => row.id)).toEqual([wide.id, own.id, theirs.id]);
    expect((await db.store.mcpServers.findMcpServerInScope({ tenantId, projectId: null }, "fs"))?.id).toBe(wide.id);
    expect((await db.store.mcpServers.findMcpServerInScope({ tenantId, projectId }, "fs"))?.id).toBe(own.id);
    expect(await db.store.mcpServers.findMcpServerInScope({ tenantId, projectId }, "only-theirs")).toBeNull();
  });
});
