import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import type { RedisConnection } from "../net/redis-connection.js";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { EventBus } from "../events/event-bus.js";
import type { ToolResult } from "../tools/tool.js";
import { defaultMcpDefaults, mcpServerKey, type McpScope, type McpServerConfig } from "./mcp-config.js";
import type { McpConnections, McpFailure, McpOutcome } from "./mcp-connections.js";
import { createMcpReplies, type McpReplies } from "./mcp-replies.js";
import { mcpRequestQueueName, type McpOperation, type McpRequest, type McpRequestJobData, type McpRequestValues } from "./mcp-request.js";

export interface McpConnectionsViaWorkersOptions {
  /** The shared command connection: the queue and the reply keys. */
  connection: RedisConnection;
  bus: Pick<EventBus, "onMcpReply" | "publishMcpReply" | "publishMcpServerStop">;
  prefix: string;
  /** How long a request may take, from enqueue to reply (`FOYA_MCP_REQUEST_TIMEOUT_MS`). */
  timeoutMs: number;
  /** How long a request may wait for a worker to take it (`FOYA_MCP_REQUEST_PICKUP_MS`). */
  pickupMs: number;
}

const maxRememberedToolLists = 1_000;

/**
 * The MCP connection contract as the API uses it (SPEC M2, E4): every listing, resource and
 * prompt is asked of a worker over the `mcp-requests` queue (src/mcp/mcp-request.ts), so this
 * process starts no server. It holds no connection: `status` is always idle, `disconnect`
 * tells every worker to stop the server, and `callTool` is refused (tools run in jobs).
 * Failures are answers, as in the contract: 503-style `no_worker` when no worker took the
 * request, `mcp_busy` when workers held it back for the whole wait because its tenant's requests
 * filled their share of the slots, `mcp_timeout` when the one that took it did not answer in time.
 */
export function createMcpConnectionsViaWorkers(options: McpConnectionsViaWorkersOptions): McpConnections {
  const { bus, prefix } = options;
  const queue = new Queue<McpRequestJobData>(mcpRequestQueueName, { connection: options.connection, prefix });
  // Connection errors are the shared connection's, logged by its own listener (src/services.ts).
  queue.on("error", () => {});
  const asker: Asker = {
    options,
    queue,
    replies: createMcpReplies({ redis: options.connection, bus, prefix }),
    replyTo: randomUUID(),
    noticed: new Map(),
    listening: undefined,
    closed: false,
    closing: new AbortController(),
    toolLists: new Map(),
  };
  return {
    defaults: defaultMcpDefaults,
    listTools: (scope, config) => listToolsOnce(asker, scope, config),
    callTool: async (_scope, config) => callRefused(config),
    listResources: (scope, config) => ask(asker, scope, config.name, { operation: "list-resources" }),
    readResource: (scope, config, uri) => ask(asker, scope, config.name, { operation: "read-resource", uri }),
    listPrompts: (scope, config) => ask(asker, scope, config.name, { operation: "list-prompts" }),
    getPrompt: (scope, config, prompt, args) => ask(asker, scope, config.name, { operation: "get-prompt", prompt, arguments: args ?? {} }),
    status: () => ({ state: "idle" }),
    async disconnect(scope, name) {
      await bus.publishMcpServerStop({ tenantId: scope.tenantId, projectId: scope.projectId, name });
    },
    async close() {
      if (asker.closed) return;
      asker.closed = true;
      asker.closing.abort();
      const stopListening = await asker.listening?.catch(() => undefined);
      stopListening?.();
      await queue.close();
    },
  };
}

/** The API process's side of the requests: its queue, its reply channel and the notices it waits for. */
interface Asker {
  options: McpConnectionsViaWorkersOptions;
  queue: Queue<McpRequestJobData>;
  replies: McpReplies;
  /** This process's reply channel: a worker's notice names the job whose reply is ready. */
  replyTo: string;
  noticed: Map<string, () => void>;
  listening: Promise<() => void> | undefined;
  closed: boolean;
  closing: AbortController;
  /** The last tool list of each server, so an unchanged list is the same array and the catalog reuses its view (R2). */
  toolLists: Map<string, { json: string; tools: McpTool[] }>;
}

function failure(errorCode: McpFailure["errorCode"], message: string): McpFailure {
  return { ok: false, errorCode, message };
}

async function listToolsOnce(asker: Asker, scope: McpScope, config: McpServerConfig): Promise<McpOutcome<McpTool[]>> {
  const { toolLists } = asker;
  const outcome = await ask(asker, scope, config.name, { operation: "list-tools" });
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

/** Whether the notice came within `ms` (false on timeout or close). */
function waitForNotice(asker: Asker, notice: Promise<void>, ms: number): Promise<boolean> {
  const { signal } = asker.closing;
  return new Promise((resolve) => {
    const finish = (came: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onClose);
      resolve(came);
    };
    const onClose = () => finish(false);
    const timer = setTimeout(() => finish(false), Math.max(0, ms));
    signal.addEventListener("abort", onClose, { once: true });
    if (signal.aborted) finish(false);
    void notice.then(() => finish(true));
  });
}

async function ask<K extends McpOperation>(
  asker: Asker,
  scope: McpScope,
  server: string,
  request: Extract<McpRequest, { operation: K }>,
): Promise<McpOutcome<McpRequestValues[K]>> {
  if (asker.closed) return failure("mcp_unavailable", `The MCP server "${server}" is unavailable: the API is shutting down.`);
  // Subscribed before the first job is added, so no notice can come before its listener.
  asker.listening ??= asker.options.bus
    .onMcpReply(asker.replyTo, (jobId) => asker.noticed.get(jobId)?.())
    .catch((error: unknown) => {
      asker.listening = undefined;
      throw error;
    });
  await asker.listening;
  const jobId = `mcp-${randomUUID()}`;
  const notice = new Promise<void>((resolve) => asker.noticed.set(jobId, resolve));
  const deadline = Date.now() + asker.options.timeoutMs;
  try {
    const data: McpRequestJobData = {
      tenantId: scope.tenantId,
      projectId: scope.projectId,
      server,
      request,
      deadline,
      replyTo: asker.replyTo,
    };
    // Read-only requests: a job a dead worker held is taken again by another (BullMQ's stall check).
    await asker.queue.add(request.operation, data, { jobId, attempts: 1, removeOnComplete: true, removeOnFail: true });
    return await answerOf<K>(asker, { jobId, notice, deadline }, server, request);
  } finally {
    asker.noticed.delete(jobId);
  }
}

/** The reply to an enqueued request, or why there is none: no worker took it, its tenant's share was full, or it timed out. */
async function answerOf<K extends McpOperation>(
  asker: Asker,
  job: { jobId: string; notice: Promise<void>; deadline: number },
  server: string,
  request: McpRequest,
): Promise<McpOutcome<McpRequestValues[K]>> {
  const { options, queue } = asker;
  const { jobId, notice } = job;
  if (!(await waitForNotice(asker, notice, options.pickupMs))) {
    // Withdrawn only while no worker holds it (a held job cannot be removed) and none held it back: a
    // request a worker held back for its tenant's share proves a worker runs, so it waits on.
    if (!(await heldBack(asker, jobId)) && (await queue.remove(jobId)) === 1)
      return (await lateReply<K>(asker, jobId)) ?? noWorker(server, options.pickupMs);
    await waitForNotice(asker, notice, job.deadline - Date.now());
  }
  // Taken even without a notice: pub/sub may lose one while the subscriber reconnects.
  const reply = await asker.replies.take(jobId);
  if (reply) return reply as McpOutcome<McpRequestValues[K]>;
  // A job still held back for its tenant's share, or one whose worker died and whose lock lapsed, not taken again since.
  const wasHeldBack = await heldBack(asker, jobId);
  if ((await queue.remove(jobId)) === 1)
    return (await lateReply<K>(asker, jobId)) ?? (wasHeldBack ? shareFull(server, options.timeoutMs) : noWorker(server, options.timeoutMs));
  return failure(
    "mcp_timeout",
    `The MCP server "${server}" did not answer ${describe(request)} within ${options.timeoutMs} ms (asked through a worker).`,
  );
}

/**
 * BullMQ's remove also answers 1 for a job that is gone: one a worker finished, replying,
 * between the API's last look for a reply and the remove. Its reply is taken, not lost.
 */
async function lateReply<K extends McpOperation>(asker: Asker, jobId: string): Promise<McpOutcome<McpRequestValues[K]> | undefined> {
  const reply = await asker.replies.take(jobId);
  return reply ? (reply as McpOutcome<McpRequestValues[K]>) : undefined;
}

/** Whether a worker moved the job back to the queue because its tenant's requests filled their share (src/worker/mcp-request-worker.ts). */
async function heldBack(asker: Asker, jobId: string): Promise<boolean> {
  const job = await asker.queue.getJob(jobId);
  return Number(job?.delay ?? 0) > 0;
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
