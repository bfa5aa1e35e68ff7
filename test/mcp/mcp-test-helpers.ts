import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger } from "../../src/logger.js";
import { createMcpConnections, type McpConnections } from "../../src/mcp/mcp-connections.js";
import type { McpDefaults, McpScope, McpServerConfig } from "../../src/mcp/mcp-config.js";
import type { ToolResult } from "../../src/tools/tool.js";
import type { McpStdioCommands } from "../../src/core/mcp-stdio-commands.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** The environment names the tests' servers are given (each admitted for node, as an operator would). */
const testEnvironmentNames = ["FOYA_MCP_MARKER", "FOYA_MCP_PROBE", "PROBE", "API_TOKEN", "OTHER_KEY"];

/** node with the names above, as `FOYA_MCP_STDIO_COMMANDS` below says, and a listed program missing on this host. */
export const testStdioCommands: McpStdioCommands = new Map([
  [process.execPath, new Set(testEnvironmentNames)],
  ["/nonexistent/mcp-server", new Set<string>()],
]);

/**
 * Settings for a Foya whose stdio MCP servers run in the sandbox (the default): node may be
 * configured as a server, and the sandbox shows the packages and fixtures the servers load
 * (the service's own folder is hidden from it otherwise).
 */
export const sandboxedMcpOverrides: Record<string, string> = {
  FOYA_MCP_STDIO_COMMANDS: [process.execPath, ...testEnvironmentNames].join(":"),
  FOYA_SANDBOX_READONLY: [path.resolve(here, "../../node_modules"), path.join(here, "fixtures")].join(","),
};

export const scope: McpScope = { tenantId: "ten_mcp", projectId: "prj_mcp" };

/** server-everything's stdio entry, run by this very node binary. */
export function everythingConfig(env: Record<string, string> = {}, overrides: Partial<McpServerConfig> = {}): McpServerConfig {
  const entry = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");
  return { name: "everything", transport: { kind: "stdio", command: process.execPath, args: [entry, "stdio"], env }, ...overrides };
}

export function faultyConfig(overrides: Partial<McpServerConfig> = {}): McpServerConfig {
  return {
    name: "faulty",
    transport: { kind: "stdio", command: process.execPath, args: [path.join(here, "fixtures/faulty-server.mjs")], env: {} },
    ...overrides,
  };
}

export function connections(defaults: Partial<McpDefaults> = {}): McpConnections {
  return createMcpConnections({ logger: createLogger("silent"), stdioCommands: testStdioCommands, defaults });
}

export function textOf(result: ToolResult): string {
  return result.content.map((part) => (part.type === "text" ? part.text : `[${part.type}]`)).join("\n");
}

/** Whether any process of the group is alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
