import { Cluster, Redis, type ClusterNode, type RedisOptions } from "ioredis";

/**
 * Every connection Foya opens to its Redis, for queues, pub/sub, counters and the start-up
 * probe, is made here: one server (`REDIS_URL`), or a Redis Cluster (`FOYA_REDIS_CLUSTER`, the
 * URL listing seed nodes). Both take the same commands. What a cluster asks of the callers:
 * each command (a Lua script, a pipeline) touches keys of one slot only, which the hash tags
 * of every key make so (`{<queue>}`, `{<session>}`, `{<tenant>}`, ...), and pub/sub is
 * sharded (`SPUBLISH`/`SSUBSCRIBE`, src/events/event-bus.ts).
 */
export type RedisConnection = Redis | Cluster;

export interface RedisSettings {
  /** One URL, or with `cluster` one or more seed nodes' URLs, comma-separated. */
  url: string;
  cluster: boolean;
}

export interface RedisConnectionOptions {
  /** For `SSUBSCRIBE`: on a cluster, one subscriber connection per master (ioredis `shardedSubscribers`). */
  subscriber?: boolean;
  /**
   * A one-shot probe: connects when asked (`connect()`), fails instead of retrying or queueing,
   * each connection and command within this many milliseconds.
   */
  probeTimeoutMs?: number;
}

/**
 * A connection. Commands wait out an outage instead of failing after a few retries
 * (`maxRetriesPerRequest: null`, which BullMQ requires of a worker's connection).
 */
export function createRedisConnection(settings: RedisSettings, options: RedisConnectionOptions = {}): RedisConnection {
  const probe: RedisOptions =
    options.probeTimeoutMs === undefined
      ? { maxRetriesPerRequest: null }
      : {
          lazyConnect: true,
          connectTimeout: options.probeTimeoutMs,
          commandTimeout: options.probeTimeoutMs,
          maxRetriesPerRequest: 0,
          enableOfflineQueue: false,
          retryStrategy: () => null,
        };
  if (!settings.cluster) return new Redis(settings.url, { ...probe, enableReadyCheck: true });
  const seeds = clusterSeeds(settings.url);
  return new Cluster(
    seeds.nodes,
    options.probeTimeoutMs === undefined
      ? { redisOptions: { ...seeds.credentials, ...probe }, shardedSubscribers: options.subscriber === true }
      : {
          redisOptions: { ...seeds.credentials, ...probe },
          lazyConnect: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: () => null,
          slotsRefreshTimeout: options.probeTimeoutMs,
        },
  );
}

/** Whether the connection is a cluster's: its pub/sub is sharded. */
export function isCluster(connection: RedisConnection): connection is Cluster {
  return connection instanceof Cluster;
}

/**
 * The cluster's seed nodes, and the credentials every node is reached with: the first URL
 * that has a user or password gives them, and `rediss:` on any URL turns TLS on.
 */
export function clusterSeeds(urls: string): { nodes: ClusterNode[]; credentials: Pick<RedisOptions, "username" | "password" | "tls"> } {
  const parsed = urls
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => new URL(part));
  if (parsed.length === 0) throw new Error("REDIS_URL names no Redis Cluster node");
  const nodes = parsed.map((url) => ({ host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(url.port || 6379) }));
  const withCredentials = parsed.find((url) => url.username !== "" || url.password !== "");
  const credentials: Pick<RedisOptions, "username" | "password" | "tls"> = {};
  if (withCredentials?.username) credentials.username = decodeURIComponent(withCredentials.username);
  if (withCredentials?.password) credentials.password = decodeURIComponent(withCredentials.password);
  if (parsed.some((url) => url.protocol === "rediss:")) credentials.tls = {};
  return { nodes, credentials };
}

/**
 * `{part}`: the Redis Cluster hash tag of a key or channel. Only this part decides the slot, so
 * keys with the same tag share one (a queue's keys, as one Lua script touches several of them)
 * and keys with different tags spread over the cluster.
 */
export function slotTag(part: string): string {
  return `{${part}}`;
}
