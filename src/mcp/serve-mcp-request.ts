import type { McpConnections, McpOutcome } from "./mcp-connections.js";
import type { McpRequestJobData } from "./mcp-request.js";
import { mcpConfigOf, mcpScopeOf } from "./mcp-server-rows.js";
import type { Store } from "../store/store.js";

export interface ServeMcpRequestContext {
  store: Pick<Store, "mcpServers">;
  /** This worker's own connections: the server starts here, in the sandbox, if it is not running yet. */
  mcp: McpConnections;
}

/**
 * Answers one MCP request of the API (src/mcp/mcp-request.ts). The configuration is read here,
 * by the request's tenant, scope and name, never taken from the job; `signal` ends any request
 * when the API stops waiting, so a slow server holds a worker's slot no longer than that.
 */
export async function serveMcpRequest(
  context: ServeMcpRequestContext,
  data: McpRequestJobData,
  signal: AbortSignal,
): Promise<McpOutcome<unknown>> {
  const row = await context.store.mcpServers.findMcpServerInScope({ tenantId: data.tenantId, projectId: data.projectId }, data.server);
  if (!row) return { ok: false, errorCode: "mcp_unavailable", message: `The MCP server "${data.server}" is not configured.` };
  const scope = mcpScopeOf(row);
  const config = mcpConfigOf(row);
  const request = data.request;
  switch (request.operation) {
    case "list-tools":
      return context.mcp.listTools(scope, config, { signal });
    case "list-resources":
      return context.mcp.listResources(scope, config, { signal });
    case "read-resource":
      return context.mcp.readResource(scope, config, request.uri, { signal });
    case "list-prompts":
      return context.mcp.listPrompts(scope, config, { signal });
    case "get-prompt":
      return context.mcp.getPrompt(scope, config, request.prompt, request.arguments, { signal });
    default: {
      const unknown: never = request;
      return { ok: false, errorCode: "mcp_request_failed", message: `Unknown MCP request ${JSON.stringify(unknown)}.` };
    }
  }
}
