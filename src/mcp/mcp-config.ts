import type { ProcessLimits } from "../core/process-limits.js";
import type { SandboxRunner } from "../sandbox/sandbox-runner.js";
import { createHash } from "node:crypto";
import type { McpTransportConfig } from "../core/mcp-transport.js";
import type { ProcessIdentity } from "../core/process-identity.js";
import type { ProjectId, TenantId } from "../ids.js";

export interface McpServerConfig {
  /** Unique within its scope; becomes the `<server>` of `mcp__<server>__<tool>`. */
  name: string;
  transport: McpTransportConfig;
  /** Start-up (spawn or connect, then `initialize`) limit; default from the manager (30 s). */
  startupTimeoutMs?: number;
  /** Limit of one request (a tool call, a resource read); default from the manager (10 min). */
  callTimeoutMs?: number;
  /** true: all its tools deferred; false: all direct; absent: deferred when the server has many tools. */
  deferTools?: boolean;
}

/**
 * How stdio servers are confined (SPEC S3): each runs under bubblewrap like a tool's process,
 * in a PID namespace of its own (the worker's processes, and their environment, are out of
 * sight), without the host's loopback (Postgres, Redis), with only the system trees, its
 * workspace and the operator's read-only trees visible.
 */
/**
 * Where and as whom stdio servers run (SPEC S3, S7). `confined` (the default,
 * `FOYA_MCP_SANDBOX`) runs each under bubblewrap like a tool's process; an
 * unconfined server still steps down to its tenant's uid with its limits, so
 * no server ever runs as host root.
 */
export interface McpSandbox {
  runner: SandboxRunner;
  confined: boolean;
  /** The server's writable folder and working directory (a project's workspace, or a folder of the tenant's own), its tenant's uid and limits. */
  placeFor(scope: McpScope, name: string): Promise<McpPlace>;
}

export interface McpPlace {
  workspaceDir: string;
  identity: ProcessIdentity;
  limits: ProcessLimits;
}

/** Whose server this is: a tenant's, or one project's of a tenant. */
export interface McpScope {
  tenantId: TenantId;
  /** null for a tenant-wide server. */
  projectId: ProjectId | null;
}

export interface McpDefaults {
  startupTimeoutMs: number;
  callTimeoutMs: number;
  /** PATH given to every stdio server (a tenant cannot set one: it chooses the programs a server's scripts run); absent gives them none. */
  stdioPath?: string;
  /** Between SIGTERM to a stdio server's process group and SIGKILL. */
  stopGraceMs: number;
  /** First wait before reconnecting after a failure; doubles per consecutive failure up to `maxBackoffMs`. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Text of one result above this keeps head and tail (O1). */
  maxResultTextBytes: number;
  /** One binary or image part above this is replaced by a note. */
  maxResultBinaryBytes: number;
  /** Servers with more tools than this have them deferred, unless `deferTools` says otherwise. */
  deferThreshold: number;
  /**
   * The largest message a server may send, in bytes: a stdio line, an HTTP response body, or one
   * event of an event stream. A larger one is not read: the connection is dropped and restarted.
   */
  maxMessageBytes: number;
}

export const defaultMcpDefaults: McpDefaults = {
  startupTimeoutMs: 30_000,
  callTimeoutMs: 10 * 60_000,
  stopGraceMs: 2_000,
  initialBackoffMs: 1_000,
  maxBackoffMs: 60_000,
  maxResultTextBytes: 256 * 1024,
  maxResultBinaryBytes: 10 * 1024 * 1024,
  deferThreshold: 20,
  maxMessageBytes: 16 * 1024 * 1024,
};

/** Identifies a server's connection within a worker: scope and name. */
export function mcpServerKey(scope: McpScope, name: string): string {
  return `${scope.tenantId}/${scope.projectId ?? "*"}/${name}`;
}

/** Changes when anything that affects the connection changes, so an edited configuration reconnects. */
export function mcpConfigFingerprint(config: McpServerConfig): string {
  return createHash("sha256").update(stableJson(config.transport)).digest("hex");
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
