import { Queue } from "bullmq";
import type { RedisConnection } from "../net/redis-connection.js";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { EventBus } from "../events/event-bus.js";
import type { ProjectId } from "../ids.js";
import { isMovedReply } from "../queue/worker-replies.js";
import { createWorkerRequestAsker, type Asked, type WorkerRequestAsker } from "../queue/worker-request-asker.js";
import type { ToolResult } from "../tools/tool.js";
import { defaultMcpDefaults, mcpServerKey, type McpScope, type McpServerConfig } from "./mcp-config.js";
import type { McpConnections, McpFailure, McpOutcome } from "./mcp-connections.js";
import { createMcpReplies } from "./mcp-replies.js";
import {
  hostMcpRequestQueueName,
  mcpRequestQueueName,
  type McpOperation,
  type McpRequest,
  type McpRequestJobData,
  type McpRequestValues,
} from "./mcp-request.js";

export interface McpConnectionsViaWorkersOptions {
  /** The shared command connection: the queues and the reply keys. */
  connection: RedisConnection;
  bus: Pick<EventBus, "onMcpReply" | "publishMcpReply" | "publishMcpServerStop">;
  prefix: string;
  /** How long a request may take, from enqueue to reply (`FOYA_MCP_REQUEST_TIMEOUT_MS`). */
  timeoutMs: number;
  /** How long a request may wait for a worker to take it (`FOYA_MCP_REQUEST_PICKUP_MS`). */
  pickupMs: number;
  /**
   * Where a project is placed (SPEC W3), placing it if needed; undefined when no host is live. A
   * project's stdio servers are asked on its host's queue. Without it, every request goes to the shared queue.
   */
  placeProject?: (projectId: ProjectId) => Promise<{ hostId: string; epoch: number } | undefined>;
}

const maxRememberedToolLists = 1_000;

/**
 * The MCP connection contract as the API uses it (SPEC M2, E4): every listing, resource and
 * prompt is asked of a worker (src/mcp/mcp-request.ts), so this process starts no server: a
 * project's stdio server's on the queue of the host the project is placed on (SPEC W3), any
 * other's on the shared `mcp-requests` queue. It holds no connection: `status` is always idle,
 * `disconnect` tells every worker to stop the server, and `callTool` is refused (tools run in jobs).
 * Failures are answers, as in the contract: 503-style `no_worker` when no worker took the
 * request, `mcp_busy` when workers held it back for the whole wait because its tenant's requests
 * filled their share of the slots, `mcp_timeout` when the one that took it did not answer in time.
 */
export function createMcpConnectionsViaWorkers(options: McpConnectionsViaWorkersOptions): McpConnections {
  const { bus, prefix } = options;
  const queues = new Map<string, Queue<McpRequestJobData>>();
  const queueNamed = (name: string) => {
    let queue = queues.get(name);
    if (!queue) {
      queue = new Queue<McpRequestJobData>(name, { connection: options.connection, prefix });
      // Connection errors are the shared connection's, logged by its own listener (src/services.ts).
      queue.on("error", () => {});
      queues.set(name, queue);
    }
    return queue;
  };
  const asker: Asker = {
    options,
    queueNamed,
    requests: createWorkerRequestAsker({ bus, replies: createMcpReplies({ redis: options.connection, bus, prefix }) }),
    toolLists: new Map(),
  };
  return {
    defaults: defaultMcpDefaults,
    listTools: (scope, config) => listToolsOnce(asker, scope, config),
    callTool: async (_scope, config) => callRefused(config),
    listResources: (scope, config) => ask(asker, scope, config, { operation: "list-resources" }),
    readResource: (scope, config, uri) => ask(asker, scope, config, { operation: "read-resource", uri }),
    listPrompts: (scope, config) => ask(asker, scope, config, { operation: "list-prompts" }),
    getPrompt: (scope, config, prompt, args) => ask(asker, scope, config, { operation: "get-prompt", prompt, arguments: args ?? {} }),
    status: () => ({ state: "idle" }),
    async disconnect(scope, name) {
      await bus.publishMcpServerStop({ tenantId: scope.tenantId, projectId: scope.projectId, name });
    },
    async close() {
      await asker.requests.close();
      await Promise.all([...queues.values()].map((queue) => queue.close()));
    },
  };
}

/** The API process's side of the requests: its queues and the asker that waits for their replies. */
interface Asker {
  options: McpConnectionsViaWorkersOptions;
  queueNamed(name: string): Queue<McpRequestJobData>;
  requests: WorkerRequestAsker;
  /** The last tool list of each server, so an unchanged list is the same array and the catalog reuses its view (R2). */
  toolLists: Map<string, { json: string; tools: McpTool[] }>;
}

function failure(errorCode: McpFailure["errorCode"], message: string): McpFailure {
  return { ok: false, errorCode, message };
}

async function listToolsOnce(asker: Asker, scope: McpScope, config: McpServerConfig): Promise<McpOutcome<McpTool[]>> {
  const { toolLists } = asker;
  const outcome = await ask(asker, scope, config, { operation: "list-tools" });
  if (!outcome.ok) return outcome;
  const key = mcpServerKey(scope, config.name);
  const json = JSON.stringify(outcome.value);
  const known = toolLists.get(key);
  if (known?.json === json) return { ok: true, value: known.tools };
  toolLists.delete(key);
  toolLists.set(key, { json, tools: outcome.value });
  if (toolLists.size > maxRememberedToolLists) toolLists.delete(toolLists.keys().next().value as string);
  return outcome;
}

function callRefused(config: McpServerConfig): ToolResult {
  return {
    content: [
      {
        type: "text",
        text: `The MCP server "${config.name}" is not called from the API process: its tools run in a worker's tool batch.`,
      },
    ],
    isError: true,
    errorCode: "mcp_unavailable",
  };
}

/** A project moved between hosts once more while it was asked again: the caller tries later. */
const askAttempts = 2;

async function ask<K extends McpOperation>(
  asker: Asker,
  scope: McpScope,
  config: McpServerConfig,
  request: Extract<McpRequest, { operation: K }>,
): Promise<McpOutcome<McpRequestValues[K]>> {
  const { options } = asker;
  const server = config.name;
  for (let attempt = 0; attempt < askAttempts; attempt++) {
    const route = await routeOf(asker, scope, config);
    if (route === undefined)
      return failure(
        "no_worker",
        `No worker runs to serve the MCP server "${server}": its project has no live host. Try again once a worker runs.`,
      );
    const job = {
      name: request.operation,
      idPrefix: "mcp",
      data: (meta: { replyTo: string; deadline: number }): McpRequestJobData => ({
        tenantId: scope.tenantId,
        projectId: scope.projectId,
        server,
        request,
        ...meta,
        ...(route.placement ? { placement: route.placement } : {}),
      }),
    };
    const asked = await asker.requests.ask(route.queue, job, { pickupMs: options.pickupMs, timeoutMs: options.timeoutMs });
    if (asked.kind === "reply" && isMovedReply(asked.reply)) continue;
    return outcomeOf<K>(asked, server, request, options);
  }
  return failure("mcp_unavailable", `The project of the MCP server "${server}" is moving to another host; try again shortly.`);
}

/**
 * The queue a server's requests go to: a project's stdio server's, its project's host's (it runs
 * in the project's workspace); any other's, the shared one. Undefined when no host is live.
 */
async function routeOf(
  asker: Asker,
  scope: McpScope,
  config: McpServerConfig,
): Promise<{ queue: Queue<McpRequestJobData>; placement?: { hostId: string; epoch: number } } | undefined> {
  const { placeProject } = asker.options;
  if (scope.projectId === null || config.transport.kind !== "stdio" || !placeProject)
    return { queue: asker.queueNamed(mcpRequestQueueName) };
  const placed = await placeProject(scope.projectId);
  if (!placed) return undefined;
  const placement = { hostId: placed.hostId, epoch: placed.epoch };
  return { queue: asker.queueNamed(hostMcpRequestQueueName(placement.hostId)), placement };
}

function outcomeOf<K extends McpOperation>(
  asked: Asked,
  server: string,
  request: McpRequest,
  options: McpConnectionsViaWorkersOptions,
): McpOutcome<McpRequestValues[K]> {
  switch (asked.kind) {
    case "reply":
      return asked.reply as McpOutcome<McpRequestValues[K]>;
    case "not_taken":
      return asked.heldBack ? shareFull(server, asked.waitedMs) : noWorker(server, asked.waitedMs);
    case "timeout":
      return failure(
        "mcp_timeout",
        `The MCP server "${server}" did not answer ${describe(request)} within ${options.timeoutMs} ms (asked through a worker).`,
      );
    case "closed":
      return failure("mcp_unavailable", `The MCP server "${server}" is unavailable: the API is shutting down.`);
    default: {
      const unknown: never = asked;
      return unknown;
    }
  }
}

function shareFull(server: string, timeoutMs: number): McpFailure {
  return failure(
    "mcp_busy",
    `The request for the MCP server "${server}" waited ${timeoutMs} ms for a slot: this tenant's MCP requests already fill its share of the workers' slots (FOYA_MCP_REQUEST_TENANT_CONCURRENCY), held by slow servers of its own. Try again later.`,
  );
}

function noWorker(server: string, waitedMs: number): McpFailure {
  return failure(
    "no_worker",
    `No worker took the request for the MCP server "${server}" within ${waitedMs} ms; MCP servers run on workers only. Try again once a worker runs.`,
  );
}

function describe(request: McpRequest): string {
  switch (request.operation) {
    case "list-tools":
      return "tools/list";
    case "list-resources":
      return "resources/list";
    case "read-resource":
      return `the read of resource ${JSON.stringify(request.uri)}`;
    case "list-prompts":
      return "prompts/list";
    case "get-prompt":
      return `prompt ${JSON.stringify(request.prompt)}`;
    default: {
      const unknown: never = request;
      return String(unknown);
    }
  }
}
