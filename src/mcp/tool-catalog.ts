import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { Store } from "../store/store.js";
import type { Logger } from "../logger.js";
import type { McpConnections, McpFailure } from "./mcp-connections.js";
import { mcpConfigOf, mcpScopeOf } from "./mcp-server-rows.js";
import type { McpServerRow } from "../store/mcp-servers.js";
import { mapMcpTools } from "./mcp-tools.js";
import { mcpConfigFingerprint, mcpServerKey, type McpScope } from "./mcp-config.js";
import { createToolExecutor, type ToolExecutor } from "../tools/execute-tool-call.js";
import type { AnyTool } from "../tools/tool.js";
import { createToolRegistry, type ToolRegistry } from "../tools/tool-registry.js";
import type { ProjectId, TenantId } from "../ids.js";

/** The registry and executor one project's sessions use: the service's own tools plus its MCP servers' tools (SPEC M1). */
export interface ScopedTools {
  registry: ToolRegistry;
  executor: ToolExecutor;
}

export interface ProjectScope {
  tenantId: TenantId;
  projectId: ProjectId;
}

/** Whether one of the project's servers answered its tool list this time, and why not (never silent: `GET /v1/tools` shows it). */
export type McpServerListing =
  | { name: string; projectId: ProjectId | null; status: "listed" }
  | { name: string; projectId: ProjectId | null; status: "unavailable"; error: { code: McpFailure["errorCode"]; message: string } };

/** A project's tools, and how each of its MCP servers answered. */
export interface ProjectTools extends ScopedTools {
  mcpServers: McpServerListing[];
}

export interface ToolCatalog {
  /**
   * Never throws for a server's failure: a server that cannot list its tools offers its last
   * known ones, or none, and its entry in `mcpServers` says why.
   */
  forProject(scope: ProjectScope): Promise<ProjectTools>;
}

export interface ToolCatalogOptions {
  base: ScopedTools;
  baseTools: readonly AnyTool[];
  store: Pick<Store, "mcpServers">;
  mcp: McpConnections;
  logger: Logger;
  /** How long a project's server configurations are reused before they are read again. */
  configTtlMs: number;
}

const maxCachedScopes = 1_000;

/** One server's tools (its last known ones when it could not answer), and how it answered. */
interface ServerTools {
  list: { version: number; tools: AnyTool[] } | undefined;
  listing: McpServerListing;
}

/**
 * Builds each project's tool view once per distinct set of tool lists and reuses it:
 * the same servers with the same tools give the same registry object, so its rendered
 * schemas stay cached and byte-identical from step to step (R2). Server configurations
 * are read at most once per `configTtlMs` per project.
 */
export function createToolCatalog(options: ToolCatalogOptions): ToolCatalog {
  const catalog: Catalog = { options, configs: new Map(), mapped: new WeakMap(), lastKnown: new Map(), views: new Map(), versions: 0 };
  return {
    async forProject(scope) {
      const rows = await serverRows(catalog, scope);
      if (rows.length === 0) return { ...options.base, mcpServers: [] };
      const answers = await Promise.all(rows.map((row) => serverTools(catalog, row)));
      const mcpServers = answers.map((answer) => answer.listing);
      const present = answers.flatMap((answer) => (answer.list ? [answer.list] : []));
      return { ...viewOf(catalog, present), mcpServers };
    },
  };
}

/** What the catalog keeps between projects' requests. */
interface Catalog {
  options: ToolCatalogOptions;
  /** Each project's server configurations, and when they were read. */
  configs: Map<string, { rows: McpServerRow[]; readAt: number; reading?: Promise<McpServerRow[]> }>;
  /** A server's mapped tools, per listed array (the connection keeps one array per tool list). */
  mapped: WeakMap<McpTool[], { version: number; tools: AnyTool[] }>;
  /** What each server offered last, for when it is down: calls then get mcp_unavailable results, not "unknown tool". */
  lastKnown: Map<string, { scope: McpScope; name: string; fingerprint: string; version: number; tools: AnyTool[] }>;
  views: Map<string, ScopedTools>;
  versions: number;
}

async function serverRows(catalog: Catalog, scope: ProjectScope): Promise<McpServerRow[]> {
  const { configs, options } = catalog;
  const key = `${scope.tenantId}/${scope.projectId}`;
  const cached = configs.get(key);
  if (cached && Date.now() - cached.readAt < options.configTtlMs) return cached.rows;
  if (cached?.reading) return cached.reading;
  const reading = options.store.mcpServers.listMcpServers(scope.tenantId, scope.projectId).then((all) => {
    stopDeleted(catalog, scope, all);
    // A project's own server hides a tenant-wide one of the same name.
    const rows = all.filter((row) => row.projectId !== null || !all.some((other) => other.projectId !== null && other.name === row.name));
    configs.set(key, { rows, readAt: Date.now() });
    if (configs.size > maxCachedScopes) configs.delete(configs.keys().next().value as string);
    return rows;
  });
  configs.set(key, { rows: cached?.rows ?? [], readAt: cached?.readAt ?? 0, reading });
  try {
    return await reading;
  } catch (error) {
    configs.delete(key);
    throw error;
  }
}

/**
 * Servers this process used in the scope that are no longer configured (deleted, or moved)
 * are stopped, so a deleted server does not keep running until the process restarts.
 */
function stopDeleted(catalog: Catalog, scope: ProjectScope, configured: readonly McpServerRow[]): void {
  const present = new Set(configured.map((row) => mcpServerKey(mcpScopeOf(row), row.name)));
  for (const [key, known] of catalog.lastKnown) {
    const { scope: server } = known;
    if (server.tenantId !== scope.tenantId || (server.projectId !== null && server.projectId !== scope.projectId)) continue;
    if (present.has(key)) continue;
    catalog.lastKnown.delete(key);
    void catalog.options.mcp.disconnect(server, known.name);
  }
}

async function serverTools(catalog: Catalog, row: McpServerRow): Promise<ServerTools> {
  const { mcp, logger } = catalog.options;
  const scope = mcpScopeOf(row);
  const config = mcpConfigOf(row);
  const key = mcpServerKey(scope, row.name);
  const fingerprint = `${mcpConfigFingerprint(config)}/${config.deferTools ?? ""}`;
  const listed = await mcp.listTools(scope, config);
  if (!listed.ok) {
    const known = catalog.lastKnown.get(key);
    logger.warn({ mcpServer: key, errorCode: listed.errorCode }, `MCP tools unavailable: ${listed.message}`);
    return {
      list: known?.fingerprint === fingerprint ? known : undefined,
      listing: {
        name: row.name,
        projectId: row.projectId,
        status: "unavailable",
        error: { code: listed.errorCode, message: listed.message },
      },
    };
  }
  let entry = catalog.mapped.get(listed.value);
  if (!entry) {
    entry = { version: ++catalog.versions, tools: mapMcpTools({ connections: mcp, scope, config }, listed.value).map((d) => d.tool) };
    catalog.mapped.set(listed.value, entry);
  }
  catalog.lastKnown.set(key, { scope, name: row.name, fingerprint, ...entry });
  return { list: entry, listing: { name: row.name, projectId: row.projectId, status: "listed" } };
}

/** The registry of the base tools and these lists, the same object for the same lists (R2). */
function viewOf(catalog: Catalog, present: ReadonlyArray<{ version: number; tools: AnyTool[] }>): ScopedTools {
  const { base, baseTools } = catalog.options;
  if (present.length === 0) return base;
  const key = present.map((list) => list.version).join(",");
  let view = catalog.views.get(key);
  if (!view) {
    const names = new Set(baseTools.map((tool) => tool.name));
    const tools = [...baseTools];
    for (const tool of present.flatMap((list) => list.tools)) {
      // Two servers whose names sanitize alike would collide; the first keeps the name.
      if (names.has(tool.name)) continue;
      names.add(tool.name);
      tools.push(tool);
    }
    const registry = createToolRegistry(tools);
    view = { registry, executor: createToolExecutor(registry) };
    catalog.views.set(key, view);
    if (catalog.views.size > maxCachedScopes) catalog.views.delete(catalog.views.keys().next().value as string);
  }
  return view;
}
