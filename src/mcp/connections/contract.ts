import type { GetPromptResult, Prompt, ReadResourceResult, Resource, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { McpStdioCommands } from "../../core/mcp-stdio-commands.js";
import type { Logger } from "../../logger.js";
import type { ToolResult } from "../../tools/tool.js";
import type { McpDefaults, McpSandbox, McpScope, McpServerConfig } from "../mcp-config.js";
import type { McpErrorCode } from "../mcp-results.js";

/** A request's answer, or why there is none (SPEC M3): never an exception. */
export type McpOutcome<T> = { ok: true; value: T } | McpFailure;
export interface McpFailure {
  ok: false;
  errorCode: McpErrorCode;
  message: string;
}

export interface McpCallOptions {
  /** Aborts the request (the run was cancelled); the server is told, the connection stays. */
  signal?: AbortSignal;
  /** Progress notifications of the server, as text. */
  onProgress?: (message: string) => void;
}

export interface McpListOptions {
  /** Ends the request (whoever asked stopped waiting): a worker's slot is never held past its asker's deadline. */
  signal?: AbortSignal;
}

export type McpServerState = "idle" | "connecting" | "connected" | "down";

export interface McpServerStatus {
  state: McpServerState;
  /** Why it is down, and when the next connection attempt may happen. */
  lastError?: string;
  retryAt?: Date;
  /** A stdio server's process group id while connected. */
  pid?: number;
}

/**
 * MCP connections of one worker (SPEC M1, M3): created once per worker, shared by
 * every call. A server, identified by its scope and name, is connected on first use,
 * kept for later calls, and after a crash, a hang or garbage it is dropped (its whole
 * process group stopped) and reconnected on a later request, with exponential backoff.
 * Every failure is an answer (`McpFailure`, or an is_error `ToolResult`), never a throw.
 */
export interface McpConnections {
  /** `options.signal` ends the wait (the list itself is shared by every caller and goes on). */
  listTools(scope: McpScope, config: McpServerConfig, options?: McpListOptions): Promise<McpOutcome<McpTool[]>>;
  callTool(
    scope: McpScope,
    config: McpServerConfig,
    tool: string,
    args: Record<string, unknown>,
    options?: McpCallOptions,
  ): Promise<ToolResult>;
  listResources(scope: McpScope, config: McpServerConfig, options?: McpListOptions): Promise<McpOutcome<Resource[]>>;
  readResource(
    scope: McpScope,
    config: McpServerConfig,
    uri: string,
    options?: McpCallOptions,
  ): Promise<McpOutcome<ReadResourceResult["contents"]>>;
  listPrompts(scope: McpScope, config: McpServerConfig, options?: McpListOptions): Promise<McpOutcome<Prompt[]>>;
  getPrompt(
    scope: McpScope,
    config: McpServerConfig,
    name: string,
    args?: Record<string, string>,
    options?: McpCallOptions,
  ): Promise<McpOutcome<GetPromptResult>>;
  status(scope: McpScope, name: string): McpServerStatus;
  /** Stops one server (e.g. its configuration was deleted); the next request starts it again. */
  disconnect(scope: McpScope, name: string): Promise<void>;
  /** Stops every server and refuses later requests. */
  close(): Promise<void>;
  readonly defaults: McpDefaults;
}

export interface CreateMcpConnectionsOptions {
  logger: Logger;
  /** Confines stdio servers (SPEC S3) and steps them down to their tenant's uid (S7); without it (tests of the protocol only) they run as the process does. */
  sandbox?: McpSandbox;
  /**
   * Checked before every HTTP request to a server, after DNS: why the address is refused,
   * or null. The configuration was checked when it was saved, but a name may resolve
   * elsewhere later (DNS rebinding). Redirects are refused for the same reason.
   */
  guardHttp?: (url: URL) => Promise<string | null>;
  /**
   * The operator's commands and the environment names each admits (`FOYA_MCP_STDIO_COMMANDS`),
   * checked again before every start: a row written before the list changed starts only if it
   * still fits (the API checks when the configuration is written).
   */
  stdioCommands: McpStdioCommands;
  defaults?: Partial<McpDefaults>;
  /** Identifies this client to servers. */
  clientInfo?: { name: string; version: string };
}
