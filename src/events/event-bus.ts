import type { SessionEvent } from "../core/events.js";
import { isCluster, slotTag, type RedisConnection } from "../net/redis-connection.js";
import { type CommandId, type ProjectId, parseId, type RunId, type SessionId, type TenantId } from "../ids.js";

/**
 * Redis pub/sub fan-out of persisted events, the cancel broadcasts and MCP request notices. One
 * subscriber connection per process, shared by every listener; Postgres stays
 * the source of truth, so a lost message is only a latency cost (readers fill
 * gaps from the event log).
 *
 * On a Redis Cluster (`FOYA_REDIS_CLUSTER`) it is sharded pub/sub: `SPUBLISH` reaches only the
 * shard that owns the channel's slot, where its subscribers listen (`SSUBSCRIBE`), instead of
 * every node of the cluster. The per-session and per-process channels carry their id as a hash
 * tag, so they spread over the shards.
 */
export interface EventBus {
  publish(events: readonly SessionEvent[]): Promise<void>;
  subscribe(sessionId: SessionId, listener: (event: SessionEvent) => void): Promise<() => void>;
  publishCancel(runId: RunId): Promise<void>;
  onCancel(listener: (runId: RunId) => void): Promise<() => void>;
  /** Background commands: the owning worker kills the command (B1, B3). */
  publishCommandCancel(commandId: CommandId): Promise<void>;
  onCommandCancel(listener: (commandId: CommandId) => void): Promise<() => void>;
  /** MCP requests (src/mcp/mcp-request.ts): a worker tells the asking process that the reply of a job is stored. */
  publishMcpReply(replyTo: string, jobId: string): Promise<void>;
  onMcpReply(replyTo: string, listener: (jobId: string) => void): Promise<() => void>;
  /** A server's configuration is gone: every worker stops its connection to it (SPEC M1). */
  publishMcpServerStop(server: McpServerRef): Promise<void>;
  onMcpServerStop(listener: (server: McpServerRef) => void): Promise<() => void>;
  close(): Promise<void>;
}

/** One MCP server by scope and name: ids only. */
export interface McpServerRef {
  tenantId: TenantId;
  projectId: ProjectId | null;
  name: string;
}

/**
 * `publisher` is the shared command connection; `createSubscriber` makes the subscriber (on a
 * cluster, one made for sharded subscriptions). A cluster publisher makes the bus sharded.
 */
export function createEventBus(options: { publisher: RedisConnection; createSubscriber: () => RedisConnection; prefix: string }): EventBus {
  const { publisher, prefix } = options;
  const sharded = isCluster(publisher);
  const sessionChannel = (sessionId: SessionId) => `${prefix}:events:${slotTag(sessionId)}`;
  const cancelChannel = `${prefix}:cancel`;
  const commandCancelChannel = `${prefix}:command-cancel`;
  const mcpReplyChannel = (replyTo: string) => `${prefix}:mcp-replies:${slotTag(replyTo)}`;
  const mcpServerStopChannel = `${prefix}:mcp-server-stop`;
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let subscriber: RedisConnection | undefined;

  const send = (channel: string, message: string) => (sharded ? publisher.spublish(channel, message) : publisher.publish(channel, message));

  function ensureSubscriber(): RedisConnection {
    if (!subscriber) {
      subscriber = options.createSubscriber();
      subscriber.on(sharded ? "smessage" : "message", (channel: string, message: string) => {
        for (const listener of listeners.get(channel) ?? []) listener(message);
      });
      subscriber.on("error", () => {});
    }
    return subscriber;
  }

  async function listen(channel: string, listener: (payload: string) => void): Promise<() => void> {
    const connection = ensureSubscriber();
    let set = listeners.get(channel);
    if (!set) {
      set = new Set();
      listeners.set(channel, set);
      await (sharded ? connection.ssubscribe(channel) : connection.subscribe(channel));
    }
    set.add(listener);
    return () => {
      const current = listeners.get(channel);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) {
        listeners.delete(channel);
        void (sharded ? connection.sunsubscribe(channel) : connection.unsubscribe(channel)).catch(() => {});
      }
    };
  }

  return {
    // One message per session per commit, the commit's events as one array in sequence order:
    // a step publishes once, not once per event, and needs no pipeline (docs/performance.md,
    // "Cost per agent step").
    async publish(events) {
      if (events.length === 0) return;
      const bySession = new Map<SessionId, SessionEvent[]>();
      for (const event of events) {
        const list = bySession.get(event.sessionId);
        if (list) list.push(event);
        else bySession.set(event.sessionId, [event]);
      }
      await Promise.all([...bySession].map(([sessionId, list]) => send(sessionChannel(sessionId), JSON.stringify(list))));
    },
    subscribe(sessionId, listener) {
      return listen(sessionChannel(sessionId), (payload) => {
        for (const event of JSON.parse(payload) as SessionEvent[]) listener(event);
      });
    },
    async publishCancel(runId) {
      await send(cancelChannel, runId);
    },
    onCancel(listener) {
      // What Redis delivers is a string; only a run id is passed on.
      return listen(cancelChannel, (payload) => {
        const runId = parseId("run", payload);
        if (runId !== null) listener(runId);
      });
    },
    async publishCommandCancel(commandId) {
      await send(commandCancelChannel, commandId);
    },
    onCommandCancel(listener) {
      return listen(commandCancelChannel, (payload) => {
        const commandId = parseId("cmd", payload);
        if (commandId !== null) listener(commandId);
      });
    },
    async publishMcpReply(replyTo, jobId) {
      await send(mcpReplyChannel(replyTo), jobId);
    },
    onMcpReply(replyTo, listener) {
      return listen(mcpReplyChannel(replyTo), listener);
    },
    async publishMcpServerStop(server) {
      await send(mcpServerStopChannel, JSON.stringify({ tenantId: server.tenantId, projectId: server.projectId, name: server.name }));
    },
    onMcpServerStop(listener) {
      return listen(mcpServerStopChannel, (payload) => listener(JSON.parse(payload) as McpServerRef));
    },
    async close() {
      listeners.clear();
      if (subscriber) {
        subscriber.disconnect();
        subscriber = undefined;
      }
    },
  };
}
