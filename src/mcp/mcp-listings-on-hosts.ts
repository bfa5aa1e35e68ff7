import type { McpConnections } from "./mcp-connections.js";

/**
 * A worker's MCP connections as its tool catalog uses them (SPEC M1, W3): a project's stdio
 * server runs in the project's workspace, on the host the project is placed on, so its tool list
 * is asked of that host (`viaHosts`, the API's way, src/mcp/mcp-connections-via-workers.ts) from
 * whichever worker runs a step; everything else is this worker's own (`local`): tenant-wide and
 * HTTP servers' lists, and every call, which runs in a tool batch, on the project's host.
 */
export function mcpListingsOnHosts(local: McpConnections, viaHosts: McpConnections): McpConnections {
  return {
    defaults: local.defaults,
    listTools: (scope, config, options) =>
      scope.projectId !== null && config.transport.kind === "stdio"
        ? viaHosts.listTools(scope, config, options)
        : local.listTools(scope, config, options),
    callTool: (scope, config, tool, args, options) => local.callTool(scope, config, tool, args, options),
    listResources: (scope, config, options) => local.listResources(scope, config, options),
    readResource: (scope, config, uri, options) => local.readResource(scope, config, uri, options),
    listPrompts: (scope, config, options) => local.listPrompts(scope, config, options),
    getPrompt: (scope, config, name, args, options) => local.getPrompt(scope, config, name, args, options),
    status: (scope, name) => local.status(scope, name),
    // A project's server runs on its host: every worker is told to stop it (its host among them).
    disconnect: (scope, name) => (scope.projectId !== null ? viaHosts.disconnect(scope, name) : local.disconnect(scope, name)),
    // Each is closed by its owner.
    close: async () => {},
  };
}
