/**
 * How one MCP server is reached (SPEC M1). Configured per tenant or project; the
 * configuration is the only source of a stdio server's environment.
 */
export type McpTransportConfig =
  | {
      kind: "stdio";
      command: string;
      args: string[];
      /** The server's whole environment (plus PATH from the manager's `stdioPath`): only names the operator admitted for `command` (`McpStdioCommands`). */
      env: Record<string, string>;
      /** Unconfined servers only; a sandboxed server runs in its workspace (see `McpSandbox`). */
      cwd?: string;
      /** Whether the sandboxed server may reach the network (through slirp4netns, never the host's loopback). */
      network?: boolean;
    }
  | { kind: "http"; url: string; headers: Record<string, string> };
