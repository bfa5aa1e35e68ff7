import type { McpServerRow } from "../store/mcp-servers.js";
import type { McpScope, McpServerConfig } from "./mcp-config.js";

/** What a stored MCP server row means to the MCP code: its scope and its configuration (the rows are the store's, store/mcp-servers.ts). */

export function mcpScopeOf(row: McpServerRow): McpScope {
  return { tenantId: row.tenantId, projectId: row.projectId };
}

export function mcpConfigOf(row: McpServerRow): McpServerConfig {
  return {
    name: row.name,
    transport: row.transport,
    ...(row.startupTimeoutMs === null ? {} : { startupTimeoutMs: row.startupTimeoutMs }),
    ...(row.callTimeoutMs === null ? {} : { callTimeoutMs: row.callTimeoutMs }),
    ...(row.deferTools === null ? {} : { deferTools: row.deferTools }),
  };
}
