import type { RedisConnection } from "../net/redis-connection.js";
import type { EventBus } from "../events/event-bus.js";
import { createWorkerReplies, type movedReply } from "../queue/worker-replies.js";
import type { McpOutcome } from "./mcp-connections.js";
import { maxMcpReplyBytes } from "./mcp-request.js";

/**
 * Replies of MCP requests (src/mcp/mcp-request.ts), as every reply a worker gives an asker
 * (src/queue/worker-replies.ts): in a key of the job's own, with an expiry; a notice of the job
 * id on the asker's channel. A reply over `maxMcpReplyBytes` becomes an `mcp_request_failed` failure.
 */
export interface McpReplies {
  /** Stores the reply (bounded by `maxMcpReplyBytes`) for `ttlMs`, then tells the asking process. */
  deliver(replyTo: string, jobId: string, reply: McpReply, ttlMs: number): Promise<void>;
  /** The stored reply, removed as it is read; undefined if there is none (not yet, or expired). */
  take(jobId: string): Promise<McpReply | undefined>;
}

/** The server's answer, or `movedReply`: the project's server runs on another host now (SPEC W3). */
export type McpReply = McpOutcome<unknown> | typeof movedReply;

export function createMcpReplies(options: { redis: RedisConnection; bus: Pick<EventBus, "publishMcpReply">; prefix: string }): McpReplies {
  const replies = createWorkerReplies({
    ...options,
    keyName: "mcp-reply",
    maxBytes: maxMcpReplyBytes,
    tooLarge: (bytes): McpOutcome<never> => ({
      ok: false,
      errorCode: "mcp_request_failed",
      message: `The MCP server's answer is ${bytes} bytes, more than the ${maxMcpReplyBytes} the API passes on.`,
    }),
  });
  return {
    deliver: (replyTo, jobId, reply, ttlMs) => replies.deliver(replyTo, jobId, reply, ttlMs),
    take: async (jobId) => (await replies.take(jobId)) as McpReply | undefined,
  };
}
