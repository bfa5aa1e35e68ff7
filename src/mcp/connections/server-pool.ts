import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../logger.js";
import {
  defaultMcpDefaults,
  mcpConfigFingerprint,
  mcpServerKey,
  type McpDefaults,
  type McpScope,
  type McpServerConfig,
} from "../mcp-config.js";
import type { StdioProcessTransport } from "../stdio-process-transport.js";
import type { CreateMcpConnectionsOptions, McpFailure, McpOutcome, McpServerStatus } from "./contract.js";

/** One connection to a server, from its start until it is dropped. */
export interface Live {
  client: Client;
  transport: Transport;
  stdio: StdioProcessTransport | undefined;
  dropped: boolean;
  failure: McpFailure | undefined;
  tools: Promise<McpTool[]> | undefined;
}

export type EntryState =
  | { kind: "idle" }
  | { kind: "connecting"; promise: Promise<McpOutcome<Live>>; attempt: object }
  | { kind: "connected"; live: Live }
  | { kind: "down"; failure: McpFailure; retryAt: number };

/** One server of the worker, by scope and name: its configuration and the state of its connection. */
export interface Entry {
  key: string;
  scope: McpScope;
  name: string;
  fingerprint: string;
  config: McpServerConfig;
  state: EntryState;
  /** Consecutive failures since the last request that succeeded: the backoff exponent. */
  failures: number;
}

/** The servers of one worker and the connections still closing: what every module of the connections shares. */
export interface ServerPool {
  options: CreateMcpConnectionsOptions;
  defaults: McpDefaults;
  logger: Logger;
  clientInfo: { name: string; version: string };
  entries: Map<string, Entry>;
  closing: Set<Promise<void>>;
  /** Set by `closePool`: later requests are refused. */
  closed: boolean;
}

export function createServerPool(options: CreateMcpConnectionsOptions): ServerPool {
  return {
    options,
    defaults: { ...defaultMcpDefaults, ...options.defaults },
    logger: options.logger,
    clientInfo: options.clientInfo ?? { name: "foya", version: "0.1.0" },
    entries: new Map(),
    closing: new Set(),
    closed: false,
  };
}

/** Closes a connection in the background; `closing` holds it until it has. */
export function stopLive(pool: ServerPool, live: Live): void {
  const stopping = live.client
    .close()
    .catch(() => undefined)
    .then(() => live.transport.close())
    .catch(() => undefined)
    .finally(() => pool.closing.delete(stopping));
  pool.closing.add(stopping);
}

/** The server is down until its backoff (doubling per consecutive failure, up to the maximum) has passed. */
export function markDown(pool: ServerPool, entry: Entry, down: McpFailure): void {
  const { defaults } = pool;
  entry.failures += 1;
  const delay = Math.min(defaults.maxBackoffMs, defaults.initialBackoffMs * 2 ** (entry.failures - 1));
  entry.state = { kind: "down", failure: down, retryAt: Date.now() + delay };
  pool.logger.warn({ mcpServer: entry.key, errorCode: down.errorCode, retryInMs: delay }, `MCP server down: ${down.message}`);
}

/** Ends a connection that failed; its server is restarted by a later request. */
export function drop(pool: ServerPool, entry: Entry, live: Live, why: McpFailure): void {
  if (live.dropped) return;
  live.dropped = true;
  live.failure = why;
  if (entry.state.kind === "connected" && entry.state.live === live) markDown(pool, entry, why);
  stopLive(pool, live);
}

/** The server's entry; a configuration whose connection changed (another fingerprint) retires the old one. */
export function entryFor(pool: ServerPool, scope: McpScope, config: McpServerConfig): Entry {
  const key = mcpServerKey(scope, config.name);
  const fingerprint = mcpConfigFingerprint(config);
  const existing = pool.entries.get(key);
  if (existing && existing.fingerprint === fingerprint) {
    existing.config = config;
    return existing;
  }
  if (existing) retire(pool, existing);
  const entry: Entry = { key, scope, name: config.name, fingerprint, config, state: { kind: "idle" }, failures: 0 };
  pool.entries.set(key, entry);
  return entry;
}

/** Stops the entry's connection, or the one it is starting once it has started. */
function retire(pool: ServerPool, entry: Entry): void {
  const state = entry.state;
  entry.state = { kind: "idle" };
  if (state.kind === "connected") {
    state.live.dropped = true;
    stopLive(pool, state.live);
  } else if (state.kind === "connecting") {
    void state.promise.then((outcome) => {
      if (outcome.ok) {
        outcome.value.dropped = true;
        stopLive(pool, outcome.value);
      }
    });
  }
}

export function serverStatus(pool: ServerPool, scope: McpScope, name: string): McpServerStatus {
  const entry = pool.entries.get(mcpServerKey(scope, name));
  if (!entry) return { state: "idle" };
  const state = entry.state;
  switch (state.kind) {
    case "idle":
    case "connecting":
      return { state: state.kind };
    case "connected":
      return state.live.stdio?.pid === undefined ? { state: "connected" } : { state: "connected", pid: state.live.stdio.pid };
    case "down":
      return { state: "down", lastError: state.failure.message, retryAt: new Date(state.retryAt) };
  }
}

export async function disconnectServer(pool: ServerPool, scope: McpScope, name: string): Promise<void> {
  const key = mcpServerKey(scope, name);
  const entry = pool.entries.get(key);
  if (!entry) return;
  pool.entries.delete(key);
  const state = entry.state;
  retire(pool, entry);
  if (state.kind === "connecting") await state.promise;
  await Promise.all([...pool.closing]);
}

export async function closePool(pool: ServerPool): Promise<void> {
  pool.closed = true;
  const pending: Promise<unknown>[] = [];
  for (const entry of pool.entries.values()) {
    if (entry.state.kind === "connecting") pending.push(entry.state.promise);
    retire(pool, entry);
  }
  pool.entries.clear();
  await Promise.all(pending);
  while (pool.closing.size > 0) await Promise.all([...pool.closing]);
}
