import { slotTag, type RedisConnection } from "../net/redis-connection.js";
import type { EventBus } from "../events/event-bus.js";
import type { McpOutcome } from "./mcp-connections.js";
import { maxMcpReplyBytes } from "./mcp-request.js";

/**
 * Replies of MCP requests (src/mcp/mcp-request.ts). The reply goes into a key of its job's
 * own, with an expiry, and only the job id goes through pub/sub: a large resource would
 * otherwise pass through the subscriber connection every SSE stream of the API shares, and
 * a reply nobody takes (the API gave up or died) expires by itself.
 */
export interface McpReplies {
  /** Stores the reply (bounded by `maxMcpReplyBytes`) for `ttlMs`, then tells the asking process. */
  deliver(replyTo: string, jobId: string, reply: McpOutcome<unknown>, ttlMs: number): Promise<void>;
  /** The stored reply, removed as it is read; undefined if there is none (not yet, or expired). */
  take(jobId: string): Promise<McpOutcome<unknown> | undefined>;
}

export function createMcpReplies(options: { redis: RedisConnection; bus: Pick<EventBus, "publishMcpReply">; prefix: string }): McpReplies {
  const { redis, bus, prefix } = options;
  const key = (jobId: string) => `${prefix}:mcp-reply:${slotTag(jobId)}`;
  return {
    async deliver(replyTo, jobId, reply, ttlMs) {
      let text = JSON.stringify(reply);
      const bytes = Buffer.byteLength(text);
      if (bytes > maxMcpReplyBytes) {
        text = JSON.stringify({
          ok: false,
          errorCode: "mcp_request_failed",
          message: `The MCP server's answer is ${bytes} bytes, more than the ${maxMcpReplyBytes} the API passes on.`,
        } satisfies McpOutcome<never>);
      }
      await redis.set(key(jobId), text, "PX", Math.max(1, Math.ceil(ttlMs)));
      await bus.publishMcpReply(replyTo, jobId);
    },
    async take(jobId) {
      const text = await redis.getdel(key(jobId));
      return text === null ? undefined : (JSON.parse(text) as McpOutcome<unknown>);
    },
  };
}
