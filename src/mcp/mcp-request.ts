import type { GetPromptResult, Prompt, ReadResourceResult, Resource, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { type ProjectId, type TenantId, parseId } from "../ids.js";
import { queueName } from "../queue/job-types.js";

/**
 * What the API asks a worker about one MCP server (SPEC M2, E4). The API process starts no
 * MCP server and needs no sandbox rights: its listings, resources and prompts are served by
 * a worker, which holds the server's connection in the sandbox like its tools' (docs/architecture/mcp.md).
 *
 * The sequence: the API adds a job to the `mcp-requests` queue and waits; a worker looks the
 * server up in Postgres by the job's tenant, scope and name (never trusting anything else of
 * the job), asks its own connection, stores the reply under a Redis key of the job's and
 * notifies the asking process on its reply channel; the API takes the reply. A request no
 * worker took within `FOYA_MCP_REQUEST_PICKUP_MS` is withdrawn (503 `no_worker`); one taken
 * but unanswered within `FOYA_MCP_REQUEST_TIMEOUT_MS` answers 504 `mcp_timeout`.
 *
 * A project's stdio server runs in the project's workspace, which is on the host the project is
 * placed on (SPEC W3): its requests go to that host's queue (`hostMcpRequestQueueName`) with the
 * placement; a worker of the host whose project was placed elsewhere meanwhile answers
 * `movedReply` and the API asks the new host once. Tenant-wide servers use the shared queue.
 */

/** The BullMQ name of the `mcp-requests` queue (hash-tagged, src/queue/job-types.ts). */
export const mcpRequestQueueName = queueName("mcp-requests");

/** A host's queue of MCP requests for its projects' stdio servers (SPEC W3): only that host's workers take them. */
export function hostMcpRequestQueueName(hostId: string): string {
  return queueName(`mcp-requests-${hostId}`);
}

/** One operation; arguments are small values from the HTTP request, never configuration or secrets. */
export type McpRequest =
  | { operation: "list-tools" }
  | { operation: "list-resources" }
  | { operation: "read-resource"; uri: string }
  | { operation: "list-prompts" }
  | { operation: "get-prompt"; prompt: string; arguments: Record<string, string> };

export type McpOperation = McpRequest["operation"];

/** What each operation answers when it succeeds. */
export interface McpRequestValues {
  "list-tools": McpTool[];
  "list-resources": Resource[];
  "read-resource": ReadResourceResult["contents"];
  "list-prompts": Prompt[];
  "get-prompt": GetPromptResult;
}

/** Job data: ids and the request only. The server's configuration (its secrets) stays in Postgres. */
export interface McpRequestJobData {
  tenantId: TenantId;
  /** The server's own scope: its project, or null for a tenant-wide server. */
  projectId: ProjectId | null;
  /** The server's name, unique within its scope. */
  server: string;
  request: McpRequest;
  /** When the API stops waiting (epoch ms): a worker that takes the job later drops it. */
  deadline: number;
  /** The asking process's reply channel (`McpReplies`). */
  replyTo: string;
  /** A project's stdio server, asked on its host's queue: the placement it was routed by (SPEC W3). */
  placement?: { hostId: string; epoch: number };
}

/** Parsed where a worker takes the job (schema at every boundary). */
export const mcpRequestJobDataSchema: z.ZodType<McpRequestJobData> = z.object({
  tenantId: z.custom<TenantId>((value) => parseId("ten", value) !== null, "a tenant id"),
  projectId: z.custom<ProjectId>((value) => parseId("prj", value) !== null, "a project id").nullable(),
  server: z.string().min(1),
  request: z.discriminatedUnion("operation", [
    z.object({ operation: z.literal("list-tools") }),
    z.object({ operation: z.literal("list-resources") }),
    z.object({ operation: z.literal("read-resource"), uri: z.string() }),
    z.object({ operation: z.literal("list-prompts") }),
    z.object({ operation: z.literal("get-prompt"), prompt: z.string(), arguments: z.record(z.string(), z.string()) }),
  ]),
  deadline: z.number(),
  replyTo: z.string().min(1),
  placement: z.object({ hostId: z.string().min(1), epoch: z.number().int().min(1) }).optional(),
});

/**
 * A reply larger than this (its JSON, in bytes) is replaced by an `mcp_request_failed` failure:
 * it passes through Redis and the API's memory. Binary resources up to ~12 MiB fit as base64.
 */
export const maxMcpReplyBytes = 16 * 1024 * 1024;
