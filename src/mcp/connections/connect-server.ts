import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { StdioProcessTransport } from "../stdio-process-transport.js";
import type { McpFailure, McpOutcome } from "./contract.js";
import { describeEnd, errorText, failure, startupFailure, tooLarge } from "./server-failures.js";
import { drop, markDown, stopLive, type Entry, type Live, type ServerPool } from "./server-pool.js";
import { createTransport } from "./server-transport.js";

/** One connection attempt, as the entry knows it while it connects. */
interface Attempt {
  /** Whether the entry still waits for this attempt (not retired, closed or replaced meanwhile). */
  current(): boolean;
  /** An HTTP response passed the size limit: the connection, once there is one, is dropped. */
  onTooLarge(what: string): void;
  started(live: Live): void;
}

/**
 * The server's connection: the one it has, the one it is starting, or a new one, unless it is
 * down and its backoff has not passed (then why it is unavailable, and when it will be tried).
 */
export async function acquire(pool: ServerPool, entry: Entry): Promise<McpOutcome<Live>> {
  const state = entry.state;
  if (state.kind === "connected") return { ok: true, value: state.live };
  if (state.kind === "connecting") return state.promise;
  if (state.kind === "down" && Date.now() < state.retryAt) {
    const seconds = Math.max(1, Math.ceil((state.retryAt - Date.now()) / 1000));
    return failure(
      "mcp_unavailable",
      `The MCP server "${entry.name}" is unavailable (${state.failure.message}) A new connection will be tried in about ${seconds} s.`,
    );
  }
  return connect(pool, entry);
}

function connect(pool: ServerPool, entry: Entry): Promise<McpOutcome<Live>> {
  const attemptId = {};
  let startedLive: Live | undefined;
  const attempt: Attempt = {
    current: () => entry.state.kind === "connecting" && entry.state.attempt === attemptId && pool.entries.get(entry.key) === entry,
    onTooLarge: (what) => {
      if (startedLive) drop(pool, entry, startedLive, tooLarge(entry, pool.defaults.maxMessageBytes, what, "during a request"));
    },
    started: (live) => {
      startedLive = live;
    },
  };
  const promise = connectOnce(pool, entry, attempt);
  entry.state = { kind: "connecting", promise, attempt: attemptId };
  return promise;
}

/** Starts the transport, then the client's `initialize` within the start-up limit; the entry is connected or down after it. */
async function connectOnce(pool: ServerPool, entry: Entry, attempt: Attempt): Promise<McpOutcome<Live>> {
  const created = await createTransport(pool, entry, attempt.onTooLarge).catch((error: unknown) =>
    failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${errorText(error)}.`),
  );
  if ("ok" in created) {
    if (attempt.current()) markDown(pool, entry, created);
    return created;
  }
  const live = openClient(pool, entry, created);
  attempt.started(live);
  const refused = await initialize(pool, entry, live);
  if (refused) {
    live.dropped = true;
    stopLive(pool, live);
    if (attempt.current()) markDown(pool, entry, refused);
    return refused;
  }
  if (!attempt.current()) {
    live.dropped = true;
    stopLive(pool, live);
    return failure("mcp_unavailable", `The MCP server "${entry.name}" was stopped while it started.`);
  }
  if (live.dropped) {
    // Closed between initialize and here.
    const down = live.failure ?? describeEnd(entry, live, "while starting", pool.defaults.maxMessageBytes);
    markDown(pool, entry, down);
    return down;
  }
  live.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    live.tools = undefined;
  });
  entry.state = { kind: "connected", live };
  pool.logger.info({ mcpServer: entry.key, pid: live.stdio?.pid }, "MCP server connected");
  return { ok: true, value: live };
}

/** A client over the transport; a connection that closes by itself is dropped with the reason its end gives. */
function openClient(pool: ServerPool, entry: Entry, created: { transport: Transport; stdio: StdioProcessTransport | undefined }): Live {
  const client = new Client(pool.clientInfo, { capabilities: {} });
  const live: Live = { client, transport: created.transport, stdio: created.stdio, dropped: false, failure: undefined, tools: undefined };
  client.onerror = (error) => pool.logger.debug({ mcpServer: entry.key, err: error.message }, "MCP client error");
  client.onclose = () => {
    if (!live.dropped) drop(pool, entry, live, describeEnd(entry, live, "during a request", pool.defaults.maxMessageBytes));
  };
  return live;
}

/** The protocol's handshake within the server's start-up limit; why it failed, or undefined. */
async function initialize(pool: ServerPool, entry: Entry, live: Live): Promise<McpFailure | undefined> {
  const timeoutMs = entry.config.startupTimeoutMs ?? pool.defaults.startupTimeoutMs;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      live.client.connect(live.transport, { timeout: timeoutMs }),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new McpError(ErrorCode.RequestTimeout, "start-up timed out")), timeoutMs);
      }),
    ]);
    return undefined;
  } catch (error) {
    return startupFailure(entry, live, error, timeoutMs, pool.defaults.maxMessageBytes);
  } finally {
    clearTimeout(timer);
  }
}
