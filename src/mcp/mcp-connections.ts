import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../logger.js";
import type { ToolResult } from "../tools/tool.js";
import {
  defaultMcpDefaults,
  mcpConfigFingerprint,
  mcpServerKey,
  type McpDefaults,
  type McpSandbox,
  type McpScope,
  type McpServerConfig,
} from "./mcp-config.js";
import { mapCallToolResult, type McpErrorCode } from "./mcp-results.js";
import { StdioProcessTransport, type StdioEnd } from "./stdio-process-transport.js";
import { boundResponse } from "./bounded-response.js";
import type { SandboxInvocation } from "../sandbox/sandbox-runner.js";
import { refusedStdioServer, type McpStdioCommands } from "../core/mcp-stdio-commands.js";

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

interface Live {
  client: Client;
  transport: Transport;
  stdio: StdioProcessTransport | undefined;
  dropped: boolean;
  failure: McpFailure | undefined;
  tools: Promise<McpTool[]> | undefined;
}

type EntryState =
  | { kind: "idle" }
  | { kind: "connecting"; promise: Promise<McpOutcome<Live>>; attempt: object }
  | { kind: "connected"; live: Live }
  | { kind: "down"; failure: McpFailure; retryAt: number };

interface Entry {
  key: string;
  scope: McpScope;
  name: string;
  fingerprint: string;
  config: McpServerConfig;
  state: EntryState;
  /** Consecutive failures since the last request that succeeded: the backoff exponent. */
  failures: number;
}

const maxPages = 50;

/** A signal that follows `parent` until `release()`; none without a parent. */
function linkSignal(parent: AbortSignal | undefined): { signal: AbortSignal | undefined; release(): void } {
  if (!parent) return { signal: undefined, release: () => {} };
  const controller = new AbortController();
  const follow = () => controller.abort(parent.reason);
  if (parent.aborted) follow();
  else parent.addEventListener("abort", follow, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener("abort", follow) };
}

/** `exec` of the server's argv as one bash line, each word single-quoted: the sandbox runs `bash -c`, and nothing in it is interpreted. */
function execLine(command: string, args: readonly string[]): string {
  return ["exec", ...[command, ...args].map((word) => `'${word.replaceAll("'", `'\\''`)}'`)].join(" ");
}

export function createMcpConnections(options: CreateMcpConnectionsOptions): McpConnections {
  const defaults: McpDefaults = { ...defaultMcpDefaults, ...options.defaults };
  const logger = options.logger;
  const clientInfo = options.clientInfo ?? { name: "foya", version: "0.1.0" };
  const entries = new Map<string, Entry>();
  const closing = new Set<Promise<void>>();
  let closed = false;

  const startupTimeout = (config: McpServerConfig) => config.startupTimeoutMs ?? defaults.startupTimeoutMs;
  const callTimeout = (config: McpServerConfig) => config.callTimeoutMs ?? defaults.callTimeoutMs;

  function failure(errorCode: McpErrorCode, message: string): McpFailure {
    return { ok: false, errorCode, message };
  }

  function stopLive(live: Live): void {
    const stopping = live.client
      .close()
      .catch(() => undefined)
      .then(() => live.transport.close())
      .catch(() => undefined)
      .finally(() => closing.delete(stopping));
    closing.add(stopping);
  }

  function markDown(entry: Entry, down: McpFailure): void {
    entry.failures += 1;
    const delay = Math.min(defaults.maxBackoffMs, defaults.initialBackoffMs * 2 ** (entry.failures - 1));
    entry.state = { kind: "down", failure: down, retryAt: Date.now() + delay };
    logger.warn({ mcpServer: entry.key, errorCode: down.errorCode, retryInMs: delay }, `MCP server down: ${down.message}`);
  }

  /** Ends a connection that failed; its server is restarted by a later request. */
  function drop(entry: Entry, live: Live, why: McpFailure): void {
    if (live.dropped) return;
    live.dropped = true;
    live.failure = why;
    if (entry.state.kind === "connected" && entry.state.live === live) markDown(entry, why);
    stopLive(live);
  }

  function describeEnd(entry: Entry, live: Live, during: string): McpFailure {
    const end: StdioEnd | undefined = live.stdio?.end;
    const stderr = live.stdio?.stderr.trim();
    const stderrNote = stderr ? ` Its last stderr output: ${JSON.stringify(stderr.slice(-1000))}` : "";
    if (end?.kind === "too-large") return tooLarge(entry, "a line on stdout", during);
    if (end?.kind === "protocol")
      return failure(
        "mcp_protocol_error",
        `The MCP server "${entry.name}" broke the protocol ${during}: ${end.message}. The connection was dropped and will be restarted.`,
      );
    if (end?.kind === "exited") {
      const how = end.signal ? `was killed by ${end.signal}` : `exited with code ${end.code}`;
      return failure(
        "mcp_unavailable",
        `The MCP server "${entry.name}" ${how} ${during}. It will be restarted on a later call.${stderrNote}`,
      );
    }
    if (end?.kind === "spawn") return failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${end.message}.`);
    if (end?.kind === "sandbox")
      return failure(
        "mcp_unavailable",
        `The MCP server "${entry.name}" was stopped ${during}: ${end.message}. It will be restarted on a later call.`,
      );
    return failure(
      "mcp_unavailable",
      `The connection to the MCP server "${entry.name}" closed ${during}. It will be reconnected on a later call.`,
    );
  }

  /** `what`: the message's form (a line on stdout, a response body, an event). */
  function tooLarge(entry: Entry, what: string, during: string): McpFailure {
    return failure(
      "mcp_message_too_large",
      `The MCP server "${entry.name}" sent ${what} larger than the ${defaults.maxMessageBytes} bytes a worker accepts (FOYA_MCP_MAX_MESSAGE_BYTES) ${during}. It was not read; the connection was dropped and will be restarted on a later call.`,
    );
  }

  /**
   * The server's transport, or why it cannot be started (the sandbox cannot be set up: never a fallback to running unconfined).
   * `onTooLarge` is told when an HTTP server's response passes `maxMessageBytes` (a stdio server's transport ends itself).
   */
  async function createTransport(
    entry: Entry,
    onTooLarge: (what: string) => void,
  ): Promise<{ transport: Transport; stdio: StdioProcessTransport | undefined } | McpFailure> {
    const transport = entry.config.transport;
    if (transport.kind === "http") {
      const guard = options.guardHttp;
      const boundedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
        if (guard) {
          const url = new URL(input instanceof Request ? input.url : input.toString());
          const refused = await guard(url).catch((error: Error) => `${url.hostname} could not be resolved: ${error.message}`);
          if (refused) throw new Error(`the server's address is refused: ${refused}`);
        }
        const response = await fetch(input, guard ? { ...init, redirect: "error" } : init);
        return boundResponse(response, defaults.maxMessageBytes, onTooLarge);
      };
      const http = new StreamableHTTPClientTransport(new URL(transport.url), {
        requestInit: { headers: { ...transport.headers } },
        fetch: boundedFetch,
      });
      return { transport: http, stdio: undefined };
    }
    const refused = refusedStdioServer(options.stdioCommands, transport);
    if (refused) return failure("mcp_unavailable", `The MCP server "${entry.name}" is not started: ${refused}.`);
    const env: Record<string, string> = { ...transport.env };
    if (defaults.stdioPath !== undefined) env.PATH = defaults.stdioPath;
    let launch: { command: string; args: readonly string[]; cwd?: string; sandbox?: SandboxInvocation } = {
      command: transport.command,
      args: transport.args,
      ...(transport.cwd === undefined ? {} : { cwd: transport.cwd }),
    };
    if (options.sandbox) {
      const place = await options.sandbox.placeFor(entry.scope, entry.name);
      // A server lives for days: no CPU-time limit, which would add its whole lifetime up.
      const limits = { ...place.limits, cpuSeconds: null };
      if (options.sandbox.confined) {
        const plan = await options.sandbox.runner.plan({
          command: execLine(transport.command, transport.args),
          workspaceDir: place.workspaceDir,
          network: transport.network === true,
          view: "confined",
          identity: place.identity,
          limits,
          // A server lives long: the smaller temporary space of background commands.
          lifetime: "background",
        });
        if (!plan.ok) return failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${plan.message}`);
        launch = { command: plan.file, args: plan.args, cwd: place.workspaceDir, sandbox: plan };
      } else {
        const stepDown = options.sandbox.runner.stepDown({ identity: place.identity, limits });
        if (!stepDown.ok) return failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${stepDown.message}`);
        const [command, ...prefix] = [...stepDown.args, transport.command];
        launch = { command: command as string, args: [...prefix, ...transport.args], cwd: transport.cwd ?? place.workspaceDir };
      }
    }
    const stdio = new StdioProcessTransport({
      ...launch,
      env,
      stopGraceMs: defaults.stopGraceMs,
      maxLineBytes: defaults.maxMessageBytes,
      onStderr: (text) => logger.debug({ mcpServer: entry.key, stderr: text.slice(0, 2000) }, "MCP server stderr"),
    });
    return { transport: stdio, stdio };
  }

  function connect(entry: Entry): Promise<McpOutcome<Live>> {
    const attempt = {};
    /** Whether the entry still waits for this attempt (not retired, closed or replaced meanwhile). */
    const current = () => entry.state.kind === "connecting" && entry.state.attempt === attempt && entries.get(entry.key) === entry;
    let started: Live | undefined;
    const onTooLarge = (what: string) => {
      if (started) drop(entry, started, tooLarge(entry, what, "during a request"));
    };
    const promise = (async (): Promise<McpOutcome<Live>> => {
      const created = await createTransport(entry, onTooLarge).catch((error: unknown) =>
        failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${errorText(error)}.`),
      );
      if ("ok" in created) {
        if (current()) markDown(entry, created);
        return created;
      }
      const { transport, stdio } = created;
      const client = new Client(clientInfo, { capabilities: {} });
      const live: Live = { client, transport, stdio, dropped: false, failure: undefined, tools: undefined };
      started = live;
      client.onerror = (error) => logger.debug({ mcpServer: entry.key, err: error.message }, "MCP client error");
      client.onclose = () => {
        if (!live.dropped) drop(entry, live, describeEnd(entry, live, "during a request"));
      };
      const timeoutMs = startupTimeout(entry.config);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          client.connect(transport, { timeout: timeoutMs }),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new McpError(ErrorCode.RequestTimeout, "start-up timed out")), timeoutMs);
          }),
        ]);
      } catch (error) {
        const down = startupFailure(entry, live, error, timeoutMs);
        live.dropped = true;
        stopLive(live);
        if (current()) markDown(entry, down);
        return down;
      } finally {
        clearTimeout(timer);
      }
      if (!current()) {
        live.dropped = true;
        stopLive(live);
        return failure("mcp_unavailable", `The MCP server "${entry.name}" was stopped while it started.`);
      }
      if (live.dropped) {
        // Closed between initialize and here.
        const down = live.failure ?? describeEnd(entry, live, "while starting");
        markDown(entry, down);
        return down;
      }
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        live.tools = undefined;
      });
      entry.state = { kind: "connected", live };
      logger.info({ mcpServer: entry.key, pid: stdio?.pid }, "MCP server connected");
      return { ok: true, value: live };
    })();
    entry.state = { kind: "connecting", promise, attempt };
    return promise;
  }

  function startupFailure(entry: Entry, live: Live, error: unknown, timeoutMs: number): McpFailure {
    // An oversized answer is why, not the closure it caused.
    if (live.failure?.errorCode === "mcp_message_too_large") return live.failure;
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      return failure("mcp_unavailable", `The MCP server "${entry.name}" did not finish starting within ${timeoutMs} ms.`);
    }
    const end = live.stdio?.end;
    if (end && end.kind !== "closed") return describeEnd(entry, live, "while starting");
    return failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${errorText(error)}.`);
  }

  function entryFor(scope: McpScope, config: McpServerConfig): Entry {
    const key = mcpServerKey(scope, config.name);
    const fingerprint = mcpConfigFingerprint(config);
    const existing = entries.get(key);
    if (existing && existing.fingerprint === fingerprint) {
      existing.config = config;
      return existing;
    }
    if (existing) retire(existing);
    const entry: Entry = { key, scope, name: config.name, fingerprint, config, state: { kind: "idle" }, failures: 0 };
    entries.set(key, entry);
    return entry;
  }

  function retire(entry: Entry): void {
    const state = entry.state;
    entry.state = { kind: "idle" };
    if (state.kind === "connected") {
      state.live.dropped = true;
      stopLive(state.live);
    } else if (state.kind === "connecting") {
      void state.promise.then((outcome) => {
        if (outcome.ok) {
          outcome.value.dropped = true;
          stopLive(outcome.value);
        }
      });
    }
  }

  async function acquire(entry: Entry): Promise<McpOutcome<Live>> {
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
    return connect(entry);
  }

  async function request<T>(
    scope: McpScope,
    config: McpServerConfig,
    what: string,
    signal: AbortSignal | undefined,
    run: (live: Live, timeoutMs: number, signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<McpOutcome<T>> {
    if (closed) return failure("mcp_unavailable", `The MCP server "${config.name}" is unavailable: the worker is shutting down.`);
    if (signal?.aborted) return failure("cancelled", "The call was cancelled.");
    const entry = entryFor(scope, config);
    const acquired = await acquire(entry);
    if (!acquired.ok) return acquired;
    const live = acquired.value;
    const timeoutMs = callTimeout(config);
    // The SDK never removes the abort listener it adds to a request's signal: each request gets
    // a signal of its own, linked to the caller's for its duration only, so a run's signal
    // does not collect one listener per call.
    const linked = linkSignal(signal);
    try {
      const value = await run(live, timeoutMs, linked.signal);
      entry.failures = 0;
      return { ok: true, value };
    } catch (error) {
      if (signal?.aborted) return failure("cancelled", "The call was cancelled.");
      if (live.dropped) return live.failure ?? describeEnd(entry, live, `during ${what}`);
      if (error instanceof McpError) {
        if (error.code === ErrorCode.RequestTimeout) {
          const down = failure(
            "mcp_timeout",
            `The MCP server "${entry.name}" did not answer ${what} within ${timeoutMs} ms. The connection was dropped and will be restarted on a later call.`,
          );
          drop(entry, live, down);
          return down;
        }
        if (error.code === ErrorCode.ConnectionClosed) {
          const down = describeEnd(entry, live, `during ${what}`);
          drop(entry, live, down);
          return down;
        }
        return failure("mcp_request_failed", `The MCP server "${entry.name}" refused ${what}: ${error.message}`);
      }
      const isSchemaError = error instanceof Error && (error.name === "ZodError" || "issues" in error);
      const down = isSchemaError
        ? failure(
            "mcp_protocol_error",
            `The MCP server "${entry.name}" answered ${what} with a malformed message. The connection was dropped and will be restarted on a later call.`,
          )
        : failure(
            "mcp_unavailable",
            `The MCP server "${entry.name}" could not be reached for ${what}: ${errorText(error)}. It will be reconnected on a later call.`,
          );
      drop(entry, live, down);
      return down;
    } finally {
      linked.release();
    }
  }

  function requestOptions(timeoutMs: number, options: McpCallOptions | undefined, signal: AbortSignal | undefined) {
    const onProgress = options?.onProgress;
    return {
      timeout: timeoutMs,
      maxTotalTimeout: timeoutMs,
      ...(signal ? { signal } : {}),
      ...(onProgress
        ? {
            onprogress: (progress: { progress: number; total?: number; message?: string }) => {
              const amount = progress.total === undefined ? `${progress.progress}` : `${progress.progress}/${progress.total}`;
              onProgress(progress.message ? `${progress.message} (${amount})` : `progress ${amount}`);
            },
          }
        : {}),
    };
  }

  async function paginate<T>(
    fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>,
  ): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const answer = await fetchPage(cursor);
      items.push(...answer.items);
      if (!answer.nextCursor) break;
      cursor = answer.nextCursor;
    }
    return items;
  }

  return {
    defaults,

    listTools(scope, config, options) {
      return request(scope, config, "tools/list", options?.signal, (live, timeoutMs, signal) => {
        live.tools ??= paginate(async (cursor) => {
          const answer = await live.client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
          return { items: answer.tools, nextCursor: answer.nextCursor };
        });
        const tools = live.tools;
        tools.catch(() => {
          if (live.tools === tools) live.tools = undefined;
        });
        return untilAborted(tools, signal);
      });
    },

    async callTool(scope, config, tool, args, options) {
      const outcome = await request(scope, config, `the call of its tool "${tool}"`, options?.signal, (live, timeoutMs, signal) =>
        live.client.callTool({ name: tool, arguments: args }, undefined, requestOptions(timeoutMs, options, signal)),
      );
      if (!outcome.ok)
        return {
          content: [{ type: "text", text: outcome.message }],
          isError: true,
          errorCode: outcome.errorCode === "mcp_request_failed" ? "mcp_tool_error" : outcome.errorCode,
        };
      return mapCallToolResult(outcome.value as Record<string, unknown>, defaults);
    },

    listResources(scope, config, options) {
      return request(scope, config, "resources/list", options?.signal, (live, timeoutMs, signal) =>
        paginate(async (cursor) => {
          const answer = await live.client.listResources(cursor ? { cursor } : undefined, {
            timeout: timeoutMs,
            ...(signal ? { signal } : {}),
          });
          return { items: answer.resources, nextCursor: answer.nextCursor };
        }),
      );
    },

    readResource(scope, config, uri, options) {
      return request(scope, config, `the read of resource ${JSON.stringify(uri)}`, options?.signal, async (live, timeoutMs, signal) => {
        const answer = await live.client.readResource({ uri }, requestOptions(timeoutMs, options, signal));
        return answer.contents;
      });
    },

    listPrompts(scope, config, options) {
      return request(scope, config, "prompts/list", options?.signal, (live, timeoutMs, signal) =>
        paginate(async (cursor) => {
          const answer = await live.client.listPrompts(cursor ? { cursor } : undefined, {
            timeout: timeoutMs,
            ...(signal ? { signal } : {}),
          });
          return { items: answer.prompts, nextCursor: answer.nextCursor };
        }),
      );
    },

    getPrompt(scope, config, name, args, options) {
      return request(scope, config, `prompt ${JSON.stringify(name)}`, options?.signal, (live, timeoutMs, signal) =>
        live.client.getPrompt({ name, ...(args ? { arguments: args } : {}) }, requestOptions(timeoutMs, options, signal)),
      );
    },

    status(scope, name) {
      const entry = entries.get(mcpServerKey(scope, name));
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
    },

    async disconnect(scope, name) {
      const key = mcpServerKey(scope, name);
      const entry = entries.get(key);
      if (!entry) return;
      entries.delete(key);
      const state = entry.state;
      retire(entry);
      if (state.kind === "connecting") await state.promise;
      await Promise.all([...closing]);
    },

    async close() {
      closed = true;
      const pending: Promise<unknown>[] = [];
      for (const entry of entries.values()) {
        if (entry.state.kind === "connecting") pending.push(entry.state.promise);
        retire(entry);
      }
      entries.clear();
      await Promise.all(pending);
      while (closing.size > 0) await Promise.all([...closing]);
    },
  };
}

/** `promise`, or a rejection once `signal` aborts, whichever comes first; the promise itself goes on. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
