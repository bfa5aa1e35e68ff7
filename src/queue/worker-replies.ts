import type { EventBus } from "../events/event-bus.js";
import { slotTag, type RedisConnection } from "../net/redis-connection.js";

/**
 * Replies of requests a process asks of workers over a queue (MCP requests, src/mcp/mcp-request.ts;
 * host requests, src/hosts/host-request.ts). The reply goes into a key of its job's own, with an
 * expiry, and only the job id goes through pub/sub (the reply channel MCP requests opened, shared
 * by every kind): a large reply would otherwise pass through the subscriber connection every SSE
 * stream of the API shares, and a reply nobody takes (the asker gave up or died) expires by itself.
 */
export interface WorkerReplies {
  /** Stores the reply (as JSON, bounded) for `ttlMs`, then tells the asking process. */
  deliver(replyTo: string, jobId: string, reply: unknown, ttlMs: number): Promise<void>;
  /** The stored reply, removed as it is read; undefined if there is none (not yet, or expired). */
  take(jobId: string): Promise<unknown>;
}

/**
 * The reply of a worker whose host no longer holds the request's project (SPEC W3: it was placed
 * elsewhere meanwhile): the asker reads the project's placement again and asks that host.
 */
export const movedReply = { moved: true } as const;

export function isMovedReply(reply: unknown): boolean {
  return typeof reply === "object" && reply !== null && (reply as { moved?: unknown }).moved === true;
}

export interface WorkerRepliesOptions {
  redis: RedisConnection;
  bus: Pick<EventBus, "publishMcpReply">;
  prefix: string;
  /** The keys' name within the prefix (`<prefix>:<keyName>:{<jobId>}`, hash-tagged by job), one per kind of request. */
  keyName: string;
  /** A reply whose JSON is larger than this many bytes is replaced by `tooLarge(bytes)`. */
  maxBytes: number;
  tooLarge(bytes: number): unknown;
}

export function createWorkerReplies(options: WorkerRepliesOptions): WorkerReplies {
  const { redis, bus, prefix, keyName } = options;
  const key = (jobId: string) => `${prefix}:${keyName}:${slotTag(jobId)}`;
  return {
    async deliver(replyTo, jobId, reply, ttlMs) {
      let text = JSON.stringify(reply);
      const bytes = Buffer.byteLength(text);
      if (bytes > options.maxBytes) text = JSON.stringify(options.tooLarge(bytes));
      await redis.set(key(jobId), text, "PX", Math.max(1, Math.ceil(ttlMs)));
      await bus.publishMcpReply(replyTo, jobId);
    },
    async take(jobId) {
      const text = await redis.getdel(key(jobId));
      return text === null ? undefined : (JSON.parse(text) as unknown);
    },
  };
}
