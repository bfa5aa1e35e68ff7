import type { CreateMcpConnectionsOptions, McpConnections } from "./connections/contract.js";
import { callTool, getPrompt, listPrompts, listResources, listTools, readResource } from "./connections/server-methods.js";
import { closePool, createServerPool, disconnectServer, serverStatus } from "./connections/server-pool.js";

export type { CreateMcpConnectionsOptions, McpConnections, McpFailure, McpOutcome } from "./connections/contract.js";

/**
 * A worker's MCP connections (SPEC M1, M3; the contract is connections/contract.ts). Made of
 * small parts in connections/: the pool of servers and their states (server-pool.ts), one
 * connection attempt (connect-server.ts) over its transport (server-transport.ts), one request
 * with its failures (server-request.ts, server-failures.ts), and the protocol's requests
 * (server-methods.ts).
 */
export function createMcpConnections(options: CreateMcpConnectionsOptions): McpConnections {
  const pool = createServerPool(options);
  return {
    defaults: pool.defaults,
    listTools: (scope, config, listOptions) => listTools(pool, { scope, config }, listOptions),
    callTool: (scope, config, tool, args, callOptions) => callTool(pool, { scope, config }, { tool, args }, callOptions),
    listResources: (scope, config, listOptions) => listResources(pool, { scope, config }, listOptions),
    readResource: (scope, config, uri, callOptions) => readResource(pool, { scope, config }, uri, callOptions),
    listPrompts: (scope, config, listOptions) => listPrompts(pool, { scope, config }, listOptions),
    getPrompt: (scope, config, name, args, callOptions) =>
      getPrompt(pool, { scope, config }, { name, ...(args ? { args } : {}) }, callOptions),
    status: (scope, name) => serverStatus(pool, scope, name),
    disconnect: (scope, name) => disconnectServer(pool, scope, name),
    close: () => closePool(pool),
  };
}
